package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.SharedMemory;
import dev.ffmtrace.memory.UnixAddress;
import dev.ffmtrace.memory.testing.Await;
import dev.ffmtrace.memory.testing.Syscalls;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import perfetto.protos.WireProtocol.IPCFrame;

import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IpcHostClientTest {
    private IpcHost host;
    private final List<ClientInfo> disconnected = new CopyOnWriteArrayList<>();

    static UnixAddress newAddress() {
        return UnixAddress.abstractName("ffmtrace-ipc-test-" + UUID.randomUUID());
    }

    static ServiceDescriptor testService(List<ClientInfo> disconnected) {
        return new ServiceDescriptor("TestService", List.of(
                new ServiceDescriptor.Method("Echo", inv -> inv.reply(inv.args())),
                new ServiceDescriptor.Method("Stream", inv -> {
                    int n = inv.args()[0];
                    for (int i = 0; i < n - 1; i++) {
                        inv.replyMore(new byte[] {(byte) i});
                    }
                    inv.reply(new byte[] {(byte) (n - 1)});
                }),
                new ServiceDescriptor.Method("Throw", inv -> {
                    throw new IllegalStateException("handler bug");
                }),
                new ServiceDescriptor.Method("Identity", inv -> inv.reply(
                        (inv.client().pid() + "," + inv.client().uid()).getBytes(StandardCharsets.UTF_8))),
                new ServiceDescriptor.Method("ReverseFile", true, IpcHostClientTest::reverseFile),
                new ServiceDescriptor.Method("Later", inv ->
                        Thread.ofPlatform().start(() -> inv.reply(inv.args())))),
                disconnected::add);
    }

    /** Reads the memfd that came with the call, and replies with a new memfd holding its bytes reversed. */
    private static void reverseFile(Invocation inv) {
        int fd = inv.takeReceivedFd();
        if (fd < 0) {
            inv.fail();
            return;
        }
        byte[] content;
        try (SharedMemory in = SharedMemory.attach(fd)) {
            content = in.segment().asSlice(0, inv.args()[0]).toArray(ValueLayout.JAVA_BYTE);
        }
        byte[] reversed = new byte[content.length];
        for (int i = 0; i < content.length; i++) {
            reversed[i] = content[content.length - 1 - i];
        }
        try (SharedMemory out = SharedMemory.create("reverse-file-reply", 4096)) {
            out.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(reversed));
            inv.reply(new byte[] {(byte) reversed.length}, false, out.fd());
        }
    }

    @BeforeEach
    void startHost() {
        // No test here waits for a send timeout but the one that makes its own host.
        host = IpcHost.listen(newAddress(), IpcHost.Options.DEFAULT.withSendTimeout(Duration.ofHours(1)));
        assertTrue(host.exposeService(new ServiceDescriptor("Other", List.of(
                new ServiceDescriptor.Method("Nothing", Invocation::fail)))));
        assertTrue(host.exposeService(testService(disconnected)));
        assertFalse(host.exposeService(new ServiceDescriptor("TestService", List.of())));
    }

    @AfterEach
    void stopHost() {
        host.close();
    }

    private static <T> T await(CompletableFuture<T> future) throws Exception {
        return future.get(20, TimeUnit.SECONDS);
    }

    @Test
    void bindLearnsServiceAndMethodIdsInDeclarationOrder() throws Exception {
        try (IpcClient client = IpcClient.connect(host.address())) {
            BoundService service = await(client.bindService("TestService"));
            assertEquals(2, service.serviceId());
            assertEquals(Map.of("Echo", 1, "Stream", 2, "Throw", 3, "Identity", 4, "ReverseFile", 5, "Later", 6),
                    service.methodIds());
            Reply reply = await(client.invoke(service, "Echo", new byte[] {1, 2, 3}));
            assertTrue(reply.success());
            assertFalse(reply.hasMore());
            assertArrayEquals(new byte[] {1, 2, 3}, reply.replyProto());
            assertArrayEquals(new byte[] {9}, await(client.invoke(service, "Later", new byte[] {9})).replyProto());
        }
    }

    @Test
    void anUnknownServiceFailsTheBind() {
        try (IpcClient client = IpcClient.connect(host.address())) {
            ExecutionException e = assertThrows(ExecutionException.class, () -> await(client.bindService("NoSuchService")));
            assertInstanceOf(IpcException.class, e.getCause());
            assertTrue(client.isConnected());
        }
    }

    @Test
    void aStreamSendsNRepliesWithHasMoreOnAllButTheLast() throws Exception {
        try (IpcClient client = IpcClient.connect(host.address())) {
            BoundService service = await(client.bindService("TestService"));
            List<Reply> replies = new CopyOnWriteArrayList<>();
            CompletableFuture<Void> done = new CompletableFuture<>();
            client.invoke(service, "Stream", new byte[] {50}, -1, reply -> {
                replies.add(reply);
                if (!reply.hasMore()) {
                    done.complete(null);
                }
            });
            await(done);
            assertEquals(50, replies.size());
            for (int i = 0; i < 50; i++) {
                assertTrue(replies.get(i).success());
                assertEquals(i < 49, replies.get(i).hasMore());
                assertArrayEquals(new byte[] {(byte) i}, replies.get(i).replyProto());
            }
        }
    }

    @Test
    void onlyMethodsThatSaySoHaveTheirSpentInvocationsReused() throws Exception {
        List<Invocation> plain = new CopyOnWriteArrayList<>();
        List<Invocation> reusing = new CopyOnWriteArrayList<>();
        try (IpcHost own = IpcHost.listen(newAddress())) {
            own.exposeService(new ServiceDescriptor("Keeper", List.of(
                    new ServiceDescriptor.Method("Plain", inv -> {
                        plain.add(inv);
                        inv.reply(inv.args());
                    }),
                    new ServiceDescriptor.Method("Reusing", false, true, inv -> {
                        reusing.add(inv);
                        inv.reply(inv.args());
                    }))));
            try (IpcClient client = IpcClient.connect(own.address())) {
                BoundService service = await(client.bindService("Keeper"));
                for (int i = 0; i < 3; i++) {
                    assertArrayEquals(new byte[] {(byte) i}, await(client.invoke(service, "Plain", new byte[] {(byte) i}))
                            .replyProto());
                }
                // A stale reference to a plain method's invocation cannot answer a later request.
                assertThrows(IllegalStateException.class, () -> plain.getFirst().reply(new byte[] {9}));
                assertEquals(3, plain.stream().distinct().count());
                for (int i = 0; i < 3; i++) {
                    assertArrayEquals(new byte[] {(byte) i},
                            await(client.invoke(service, "Reusing", new byte[] {(byte) i})).replyProto());
                }
                assertEquals(1, reusing.stream().distinct().count(), "one invocation object served every call");
            }
        }
    }

    @Test
    void aHandlerThatThrowsFailsItsInvocationAndTheHostCarriesOn() throws Exception {
        try (IpcClient client = IpcClient.connect(host.address())) {
            BoundService service = await(client.bindService("TestService"));
            Reply reply = await(client.invoke(service, "Throw", new byte[0]));
            assertFalse(reply.success());
            assertEquals(1, host.handlerFailures());
            assertTrue(await(client.invoke(service, "Echo", new byte[] {4})).success());
        }
    }

    @Test
    void unknownIdsAndRequestsGetPerfettosAnswersByteForByte() {
        try (RawPeer peer = new RawPeer(host.address())) {
            peer.send(Frames.bindService(1, "Nope"));
            assertArrayEquals(Frames.bindServiceReply(1, 0, null), peer.nextFrameBytes());
            peer.send(Frames.bindService(2, "TestService"));
            assertArrayEquals(Frames.bindServiceReply(2, 2,
                    List.of("Echo", "Stream", "Throw", "Identity", "ReverseFile", "Later")), peer.nextFrameBytes());
            // Unknown service id, method id 0, method id past the last.
            peer.send(Frames.invokeMethod(3, 42, 1, new byte[0], false));
            assertArrayEquals(Frames.invokeMethodRejected(3), peer.nextFrameBytes());
            peer.send(Frames.invokeMethod(4, 2, 0, new byte[0], false));
            assertArrayEquals(Frames.invokeMethodRejected(4), peer.nextFrameBytes());
            peer.send(Frames.invokeMethod(5, 2, 7, new byte[0], false));
            assertArrayEquals(Frames.invokeMethodRejected(5), peer.nextFrameBytes());
            // A frame with only a request id.
            peer.send(Frames.withHeader(new byte[] {0x10, 0x06}));
            assertArrayEquals(Frames.requestError(6, "unknown request"), peer.nextFrameBytes());
            // A reply without drop_reply, then none for a dropped one: the next frame answers request 8.
            peer.send(Frames.invokeMethod(7, 2, 1, new byte[] {7}, true));
            peer.send(Frames.invokeMethod(8, 2, 1, new byte[] {8}, false));
            assertArrayEquals(Frames.invokeMethodReply(8, true, false, new byte[] {8}), peer.nextFrameBytes());
            assertEquals(0, host.violations());
        }
    }

    @Test
    void framesSentByteByByteAreAnswered() {
        try (RawPeer peer = new RawPeer(host.address())) {
            peer.sendByteByByte(Frames.bindService(1, "TestService"));
            assertEquals(2, peer.nextFrame().getMsgBindServiceReply().getServiceId());
            peer.sendByteByByte(concat(Frames.invokeMethod(2, 2, 1, new byte[] {1, 2}, false),
                    Frames.invokeMethod(3, 2, 1, new byte[300], false)));
            IPCFrame first = peer.nextFrame();
            assertEquals(2, first.getRequestId());
            assertEquals(2, first.getMsgInvokeMethodReply().getReplyProto().size());
            IPCFrame second = peer.nextFrame();
            assertEquals(3, second.getRequestId());
            assertEquals(300, second.getMsgInvokeMethodReply().getReplyProto().size());
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Test
    void thePeersIdentityComesFromSoPeercredNotFromTheFrame() {
        try (RawPeer peer = new RawPeer(host.address())) {
            peer.send(Frames.setPeerIdentity(1, 1, 1));
            peer.send(Frames.bindService(2, "TestService"));
            assertEquals(2, peer.nextFrame().getRequestId(), "SetPeerIdentity gets no reply");
            peer.send(Frames.invokeMethod(3, 2, 4, new byte[0], false));
            String identity = peer.nextFrame().getMsgInvokeMethodReply().getReplyProto().toStringUtf8();
            assertEquals(Os.pid() + "," + Os.uid(), identity);
        }
    }

    @Test
    void fileDescriptorsTravelBothWays() throws Exception {
        byte[] content = "perfetto ipc".getBytes(StandardCharsets.UTF_8);
        try (IpcClient client = IpcClient.connect(host.address());
             SharedMemory file = SharedMemory.create("ipc-test-request", 4096)) {
            BoundService service = await(client.bindService("TestService"));
            file.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(content));
            CompletableFuture<Reply> replied = new CompletableFuture<>();
            client.invoke(service, "ReverseFile", new byte[] {(byte) content.length}, file.fd(), replied::complete);
            Reply reply = await(replied);
            assertTrue(reply.success());
            assertTrue(reply.fd() >= 0, "the reply carries the host's memfd");
            try (SharedMemory back = SharedMemory.attach(reply.fd())) {
                byte[] reversed = back.segment().asSlice(0, reply.replyProto()[0]).toArray(ValueLayout.JAVA_BYTE);
                assertEquals(new StringBuilder("perfetto ipc").reverse().toString(),
                        new String(reversed, StandardCharsets.UTF_8));
            }
        }
    }

    @Test
    void aDescriptorWhereNoneIsExpectedClosesOnlyThatConnection() throws Exception {
        try (IpcClient good = IpcClient.connect(host.address());
             IpcClient bad = IpcClient.connect(host.address());
             SharedMemory file = SharedMemory.create("ipc-test-stray", 4096)) {
            BoundService service = await(good.bindService("TestService"));
            BoundService sameForBad = await(bad.bindService("TestService"));
            CompletableFuture<Reply> lost = new CompletableFuture<>();
            bad.invoke(sameForBad, "Echo", new byte[] {1}, file.fd(), lost::complete);
            assertFalse(await(lost).success(), "the connection closed under the request");
            assertEquals(1, host.violations());
            Await.until(() -> !bad.isConnected());
            assertTrue(await(good.invoke(service, "Echo", new byte[] {2})).success());
            Await.until(() -> disconnected.size() == 1);
        }
    }

    @Test
    void anOversizedFrameClosesTheConnectionAndAnOversizedSendIsRefused() throws Exception {
        try (RawPeer peer = new RawPeer(host.address())) {
            peer.send(new byte[] {(byte) 0xfd, (byte) 0xff, 0x01, 0x00, 0x10});
            assertNull(peer.nextFrameBytes());
            assertEquals(1, host.violations());
        }
        try (IpcClient client = IpcClient.connect(host.address())) {
            BoundService service = await(client.bindService("TestService"));
            assertThrows(IllegalArgumentException.class,
                    () -> client.invoke(service, "Echo", new byte[Frames.MAX_PAYLOAD]));
            assertTrue(await(client.invoke(service, "Echo", new byte[100_000])).success());
        }
    }

    @Test
    void aClientThatStopsReadingIsDisconnectedAtOnceThoughASendToItIsBlocked() throws Exception {
        CompletableFuture<Invocation> held = new CompletableFuture<>();
        CountDownLatch gone = new CountDownLatch(1);
        assertTrue(host.exposeService(new ServiceDescriptor("Flood",
                List.of(new ServiceDescriptor.Method("Hold", held::complete)), client -> gone.countDown())));
        try (RawPeer peer = new RawPeer(host.address())) {
            peer.send(Frames.bindService(1, "Flood"));
            int serviceId = peer.nextFrame().getMsgBindServiceReply().getServiceId();
            peer.send(Frames.invokeMethod(2, serviceId, 1, new byte[0], false));
            Invocation invocation = await(held);
            // The peer reads nothing more: replies fill its socket until a send blocks for good.
            AtomicInteger flooderTid = new AtomicInteger();
            Thread flooder = Thread.ofPlatform().start(() -> {
                flooderTid.set(Os.tid());
                while (gone.getCount() > 0) {
                    invocation.replyMore(new byte[60_000]);
                }
            });
            Await.until(() -> flooderTid.get() != 0);
            // A send to a full socket waits in poll for room, until its timeout (an hour here).
            Syscalls.awaitBlockedIn(Os.pid(), flooderTid.get(), Syscalls.Call.POLL);
            CompletableFuture<Void> disconnect =
                    CompletableFuture.runAsync(() -> host.disconnect(invocation.client().clientId()));
            await(disconnect);
            assertTrue(gone.await(20, TimeUnit.SECONDS), "the connection closed");
            flooder.join(TimeUnit.SECONDS.toMillis(20));
            assertFalse(flooder.isAlive(), "the blocked send failed when the connection was shut down");
        }
    }


    @Test
    void aClientThatTakesNoFrameWithinTheSendTimeoutIsDisconnectedAndTheSenderGoesOn() throws Exception {
        CompletableFuture<Invocation> held = new CompletableFuture<>();
        CountDownLatch gone = new CountDownLatch(1);
        try (IpcHost impatient = IpcHost.listen(newAddress(), IpcHost.Options.DEFAULT.withSendTimeout(Duration.ofMillis(200)));
             RawPeer peer = new RawPeer(impatient.address());
             IpcClient sentinel = IpcClient.connect(impatient.address())) {
            assertTrue(impatient.exposeService(new ServiceDescriptor("Flood",
                    List.of(new ServiceDescriptor.Method("Hold", held::complete)), client -> gone.countDown())));
            assertTrue(impatient.exposeService(testService(disconnected)));
            peer.send(Frames.bindService(1, "Flood"));
            int serviceId = peer.nextFrame().getMsgBindServiceReply().getServiceId();
            peer.send(Frames.invokeMethod(2, serviceId, 1, new byte[0], false));
            Invocation invocation = await(held);
            // The peer reads nothing more: the replies fill its socket, and the send that
            // finds no room for 200 ms ends the connection. Nobody disconnects it else.
            CompletableFuture<Integer> flooded = CompletableFuture.supplyAsync(() -> {
                int replies = 0;
                while (gone.getCount() > 0) {
                    invocation.replyMore(new byte[60_000]);
                    replies++;
                }
                return replies;
            });
            assertTrue(gone.await(20, TimeUnit.SECONDS), "the connection closed");
            assertTrue(await(flooded) > 0);
            assertEquals(1, impatient.sendTimeouts());
            // The other client was answered throughout, and is still.
            BoundService echo = await(sentinel.bindService("TestService"));
            assertArrayEquals(new byte[] {7}, await(sentinel.invoke(echo, "Echo", new byte[] {7})).replyProto());
            assertEquals(0, impatient.violations());
        }
    }

    @Test
    void aUidHoldsAtMostItsConnectionsAndAnotherIsClosedAtOnce() throws Exception {
        try (IpcHost capped = IpcHost.listen(newAddress(), IpcHost.Options.DEFAULT.withMaxConnectionsPerUid(3))) {
            assertTrue(capped.exposeService(testService(disconnected)));
            List<IpcClient> held = new java.util.ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    IpcClient client = IpcClient.connect(capped.address());
                    held.add(client);
                    assertTrue(await(client.bindService("TestService")).methodIds().containsKey("Echo"));
                }
                try (IpcClient fourth = IpcClient.connect(capped.address())) {
                    ExecutionException refused = assertThrows(ExecutionException.class,
                            () -> await(fourth.bindService("TestService")));
                    assertInstanceOf(IpcException.class, refused.getCause());
                }
                assertEquals(1, capped.connectionsRefused());
                // One leaves: its place is free again.
                held.removeFirst().close();
                Await.until(() -> capped.clientCount() == 2);
                try (IpcClient again = IpcClient.connect(capped.address())) {
                    assertTrue(await(again.bindService("TestService")).methodIds().containsKey("Echo"));
                }
                assertEquals(1, capped.connectionsRefused());
            } finally {
                held.forEach(IpcClient::close);
            }
        }
    }

    @Test
    void closingTheHostEndsOpenRequestsAndTheClientsConnection() throws Exception {
        IpcClient client = IpcClient.connect(host.address());
        BoundService service = await(client.bindService("TestService"));
        host.close();
        Await.until(() -> !client.isConnected());
        assertFalse(await(client.invoke(service, "Echo", new byte[] {1})).success());
        client.close();
    }

}
