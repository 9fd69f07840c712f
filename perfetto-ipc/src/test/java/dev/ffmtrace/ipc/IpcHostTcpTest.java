package dev.ffmtrace.ipc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ffmtrace.memory.Os;
import dev.ffmtrace.memory.TcpAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The host on TCP: who a client is when the kernel cannot say, and how a relay names it. */
class IpcHostTcpTest {
    private static final String BOOT_ID = "4f1b3ac2-6f0e-4c1d-9d3a-0c9b2f6e7a10";
    /** FNV-1a 64 of {@link #BOOT_ID}'s bytes, low 32 bits: what traced derives from the same hint. */
    private static final int BOOT_ID_MACHINE = -1278369095;
    /** The same of "127.0.0.1", the address a hintless relay reached the host at. */
    private static final int LOOPBACK_MACHINE = 81335486;

    private final BlockingQueue<ClientInfo> disconnected = new LinkedBlockingQueue<>();
    private IpcHost host;

    private IpcHost listen(IpcHost.Options options, boolean tcp) {
        host = IpcHost.listen(tcp ? TcpAddress.loopback(0) : IpcHostClientTest.newAddress(), options);
        host.exposeService(new ServiceDescriptor("Who", List.of(new ServiceDescriptor.Method("Who", inv -> {
            ClientInfo client = inv.client();
            inv.reply((client.pid() + "," + client.uid() + "," + client.machineId() + "," + client.machineName())
                    .getBytes(StandardCharsets.UTF_8));
        })), disconnected::add));
        return host;
    }

    @AfterEach
    void close() {
        if (host != null) {
            host.close();
        }
    }

    /** Binds Who (service 1) and asks it; the reply's text. */
    private static String who(RawPeer peer, long requestId) {
        peer.send(Frames.bindService(requestId, "Who"));
        assertEquals(requestId, peer.nextFrame().getRequestId());
        peer.send(Frames.invokeMethod(requestId + 1, 1, 1, new byte[0], false));
        return peer.nextFrame().getMsgInvokeMethodReply().getReplyProto().toStringUtf8();
    }

    @Test
    void aTcpClientWithoutAnIdentityIsUidZeroOfThisMachine() {
        listen(IpcHost.Options.DEFAULT, true);
        try (RawPeer peer = new RawPeer(host.address())) {
            assertEquals("-1,0,0,null", who(peer, 1));
        }
    }

    @Test
    void aRelayNamesItsProducerOnceBeforeItBindsAndTheMachineIdIsTraceds() throws Exception {
        listen(IpcHost.Options.DEFAULT, true);
        try (RawPeer peer = new RawPeer(host.address())) {
            peer.send(Frames.setPeerIdentity(1, 4242, 1000, BOOT_ID, "guest-a"));
            peer.send(Frames.setPeerIdentity(2, 1, 1, "other", "forged"));
            assertEquals("4242,1000," + BOOT_ID_MACHINE + ",guest-a", who(peer, 3));
            peer.send(Frames.setPeerIdentity(5, 1, 1, "other", "late"));
            assertEquals("4242,1000," + BOOT_ID_MACHINE + ",guest-a", who(peer, 6));
        }
        ClientInfo gone = disconnected.poll(20, TimeUnit.SECONDS);
        assertEquals(new ClientInfo(gone.clientId(), 1000, 4242, BOOT_ID_MACHINE, "guest-a", false), gone);
        assertEquals(2, host.identitiesRefused());
    }

    @Test
    void withoutAHintTheMachineIsTheAddressTheConnectionReachedWithoutItsPort() {
        listen(IpcHost.Options.DEFAULT, true);
        try (RawPeer peer = new RawPeer(host.address())) {
            peer.send(Frames.setPeerIdentity(1, 7, 8, "", ""));
            assertEquals("7,8," + LOOPBACK_MACHINE + ",", who(peer, 2));
        }
    }

    @Test
    void aUnixClientsIdentityIsTheKernelsWhateverItSends() {
        listen(IpcHost.Options.DEFAULT, false);
        try (RawPeer peer = new RawPeer(host.address())) {
            peer.send(Frames.setPeerIdentity(1, 4242, 1000, BOOT_ID, "guest-a"));
            assertEquals(Os.pid() + "," + Os.uid() + ",0,null", who(peer, 2));
        }
        assertEquals(1, host.identitiesRefused());
    }

    @Test
    void tcpClientsShareOneAllowanceWhateverUidTheyClaim() throws Exception {
        listen(IpcHost.Options.DEFAULT.withMaxConnectionsPerUid(2).withSendTimeout(Duration.ofHours(1)), true);
        try (RawPeer first = new RawPeer(host.address()); RawPeer second = new RawPeer(host.address())) {
            first.send(Frames.setPeerIdentity(1, 1, 1, "a", "a"));
            second.send(Frames.setPeerIdentity(1, 2, 2, "b", "b"));
            who(first, 2);
            who(second, 2);
            try (RawPeer third = new RawPeer(host.address())) {
                assertEquals(null, third.nextFrameBytes(), "the third TCP client is closed at once");
            }
            assertTrue(host.connectionsRefused() >= 1);
        }
    }
}
