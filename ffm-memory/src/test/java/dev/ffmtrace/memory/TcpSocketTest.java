package dev.ffmtrace.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.Test;

class TcpSocketTest {
    @Test
    void bytesTravelBothWaysOverLoopbackOnThePortTheKernelChose() throws Exception {
        try (ListeningSocket server = ListeningSocket.listen(TcpAddress.loopback(0), 4)) {
            TcpAddress bound = assertInstanceOf(TcpAddress.class, server.address());
            assertNotEquals(0, bound.port());
            assertTrue(bound.isLoopback());
            try (StreamSocket client = StreamSocket.connect(bound);
                 StreamSocket accepted = server.accept()) {
                assertFalse(client.isUnix());
                assertFalse(accepted.isUnix());
                client.send("ping".getBytes());
                byte[] buffer = new byte[8];
                assertEquals(4, accepted.receive(buffer, 0).bytes());
                accepted.send("pong!".getBytes());
                assertEquals(5, client.receive(buffer, new int[0]));
                assertEquals("pong!", new String(buffer, 0, 5));
            }
        }
    }

    @Test
    void aTcpConnectionRefusesDescriptorsAndHasNoPeerCredentials() {
        try (ListeningSocket server = ListeningSocket.listen(TcpAddress.loopback(0), 1);
             StreamSocket client = StreamSocket.connect(server.address());
             StreamSocket accepted = server.accept();
             SharedMemory memory = SharedMemory.create("tcp-fd", 4096)) {
            assertThrows(IllegalArgumentException.class, () -> client.send(new byte[] {1}, memory.fd()));
            assertThrows(IllegalStateException.class, accepted::peerCredentials);
        }
    }

    @Test
    void aJdkSocketTalksToTheListenerAndAnIpv6OneToo() throws Exception {
        // The sockaddr bytes are ours: a peer the JDK built checks them against the kernel's view.
        try (ListeningSocket server = ListeningSocket.listen(TcpAddress.loopback(0), 1);
             Socket jdk = new Socket(InetAddress.getLoopbackAddress(), ((TcpAddress) server.address()).port());
             StreamSocket accepted = server.accept()) {
            jdk.getOutputStream().write(new byte[] {7, 8, 9});
            byte[] buffer = new byte[3];
            assertEquals(3, accepted.receive(buffer, 0).bytes());
            assertArrayEquals(new byte[] {7, 8, 9}, buffer);
        }
        try (ServerSocket jdk = new ServerSocket(0, 1, InetAddress.getByName("::1"));
             StreamSocket client = StreamSocket.connect(TcpAddress.parse("[::1]:" + jdk.getLocalPort()));
             Socket accepted = jdk.accept()) {
            client.send(new byte[] {42});
            assertEquals(42, accepted.getInputStream().read());
        }
    }

    @Test
    void addressesParseAsPerfettoWritesThem() throws Exception {
        assertEquals(new TcpAddress(InetAddress.getByName("127.0.0.1"), 20001), StreamAddress.parse("127.0.0.1:20001"));
        assertEquals(new TcpAddress(InetAddress.getByName("::1"), 80), StreamAddress.parse("[::1]:80"));
        assertEquals("[::1]:80", StreamAddress.parse("[::1]:80").toString());
        assertEquals(UnixAddress.abstractName("traced-producer"), StreamAddress.parse("@traced-producer"));
        assertEquals(UnixAddress.parse("/tmp/a:b"), StreamAddress.parse("/tmp/a:b"));
        assertEquals(UnixAddress.parse("relative.sock"), StreamAddress.parse("relative.sock"));
        for (String bad : new String[] {"127.0.0.1:", ":80", "127.0.0.1:http", "127.0.0.1:65536", "::1:80"}) {
            assertThrows(IllegalArgumentException.class, () -> StreamAddress.parse(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> StreamAddress.parse("vsock://2:9000"));
    }

    @Test
    void ipv6HostsAreWrittenAsInetNtopWritesThem() throws Exception {
        String[][] cases = {
            {"::", "::"}, {"::1", "::1"}, {"2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},
            {"2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"}, {"fe80:0:0:0:0:0:0:0", "fe80::"},
            {"1:0:0:2:0:0:0:3", "1:0:0:2::3"}, {"0:0:1:0:0:0:0:0", "0:0:1::"}, {"ABCD:0:0:0:0:0:0:EF", "abcd::ef"},
        };
        for (String[] c : cases) {
            assertEquals(c[1], new TcpAddress(InetAddress.getByName(c[0]), 1).hostText(), c[0]);
        }
        assertEquals("10.0.0.7", new TcpAddress(InetAddress.getByName("10.0.0.7"), 1).hostText());
    }

    @Test
    void anAcceptedConnectionKnowsTheAddressItWasReachedAt() {
        try (ListeningSocket server = ListeningSocket.listen(TcpAddress.loopback(0), 1);
             StreamSocket client = StreamSocket.connect(server.address());
             StreamSocket accepted = server.accept()) {
            assertEquals(server.address(), accepted.localAddress());
            assertNotEquals(server.address(), client.localAddress());
        }
    }

    @Test
    void aTakenPortFailsToBindWithTheAddressInTheMessage() {
        try (ListeningSocket first = ListeningSocket.listen(TcpAddress.loopback(0), 1)) {
            NativeException e = assertThrows(NativeException.class, () -> ListeningSocket.listen(first.address(), 1));
            assertTrue(e.getMessage().contains(first.address().toString()), e.getMessage());
        }
    }
}
