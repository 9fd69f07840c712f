package dev.ffmtrace.ipc;

import com.google.protobuf.ByteString;
import org.junit.jupiter.api.Test;
import perfetto.protos.WireProtocol.IPCFrame;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The frames' exact bytes. Expected values are derived by hand from wire_protocol.proto
 * (field numbers, proto2 presence, Perfetto's declaration order) and cross-checked with
 * protobuf-java, which writes the same bytes whenever every nested message is shorter
 * than 128 bytes; above that Perfetto's ProtoZero keeps a 4-byte redundant length.
 */
class FramesGoldenTest {
    private static final HexFormat HEX = HexFormat.of();

    private static byte[] framed(IPCFrame frame) {
        return Frames.withHeader(frame.toByteArray());
    }

    @Test
    void bindServiceAsPerfettosClientSendsIt() {
        byte[] bytes = Frames.bindService(1, "ProducerPort");
        // size 18 | request_id=1 | msg_bind_service (field 3, 14 bytes) { service_name (field 1, 12 bytes) }
        assertEquals("12000000" + "1001" + "1a0e" + "0a0c" + HEX.formatHex("ProducerPort".getBytes()),
                HEX.formatHex(bytes));
        assertArrayEquals(framed(IPCFrame.newBuilder().setRequestId(1)
                .setMsgBindService(IPCFrame.BindService.newBuilder().setServiceName("ProducerPort")).build()), bytes);
    }

    @Test
    void invokeMethodAsPerfettosClientSendsIt() {
        byte[] args = {0x08, (byte) 0x96, 0x01};
        byte[] bytes = Frames.invokeMethod(2, 1, 4, args, false);
        // size 15 | request_id=2 | msg_invoke_method (field 5, 11 bytes)
        //   { service_id=1, method_id=4, args_proto (3 bytes), drop_reply=false (set, so present) }
        assertEquals("0f000000" + "1002" + "2a0b" + "0801" + "1004" + "1a03089601" + "2000", HEX.formatHex(bytes));
        assertArrayEquals(framed(IPCFrame.newBuilder().setRequestId(2)
                .setMsgInvokeMethod(IPCFrame.InvokeMethod.newBuilder().setServiceId(1).setMethodId(4)
                        .setArgsProto(ByteString.copyFrom(args)).setDropReply(false)).build()), bytes);
    }

    @Test
    void aLargeInvocationKeepsProtozerosFourByteLength() {
        byte[] args = new byte[200];
        Arrays.fill(args, (byte) 0x55);
        byte[] bytes = Frames.invokeMethod(3, 1, 2, args, true);
        // InvokeMethod body: 2 + 2 + 3 (tag, 2-byte length 200) + 200 + 2 = 209 = 0xd1,
        // as the redundant varint d1 81 80 00.
        assertEquals("1003" + "2a" + "d1818000" + "0801" + "1002" + "1ac801",
                HEX.formatHex(bytes, 4, 4 + 14));
        assertEquals(4 + 2 + 5 + 209, bytes.length);
        IPCFrame parsed = parse(bytes);
        assertEquals(ByteString.copyFrom(args), parsed.getMsgInvokeMethod().getArgsProto());
        assertEquals(true, parsed.getMsgInvokeMethod().getDropReply());
    }

    @Test
    void hostRepliesAsPerfettosHostSendsThem() {
        byte[] bound = Frames.bindServiceReply(1, 1, List.of("InitializeConnection", "RegisterDataSource"));
        assertArrayEquals(framed(IPCFrame.newBuilder().setRequestId(1)
                .setMsgBindServiceReply(IPCFrame.BindServiceReply.newBuilder().setSuccess(true).setServiceId(1)
                        .addMethods(IPCFrame.BindServiceReply.MethodInfo.newBuilder().setId(1).setName("InitializeConnection"))
                        .addMethods(IPCFrame.BindServiceReply.MethodInfo.newBuilder().setId(2).setName("RegisterDataSource")))
                .build()), bound);

        // Unknown service: an empty BindServiceReply, present but without success.
        assertEquals("04000000" + "1007" + "2200", HEX.formatHex(Frames.bindServiceReply(7, 0, null)));
        // Unknown method: success explicitly false.
        assertEquals("06000000" + "1008" + "32020800", HEX.formatHex(Frames.invokeMethodRejected(8)));
        // A stream's reply: success, has_more, reply_proto in declaration order.
        assertEquals("0c000000" + "1009" + "3208" + "0801" + "1001" + "1a02abcd",
                HEX.formatHex(Frames.invokeMethodReply(9, true, true, new byte[] {(byte) 0xab, (byte) 0xcd})));
        // A rejected deferred reply: has_more only.
        assertEquals("06000000" + "100a" + "32021000", HEX.formatHex(Frames.invokeMethodReply(10, false, false, new byte[0])));
        assertArrayEquals(framed(IPCFrame.newBuilder().setRequestId(11)
                .setMsgRequestError(IPCFrame.RequestError.newBuilder().setError("unknown request")).build()),
                Frames.requestError(11, Frames.UNKNOWN_REQUEST));
    }

    private static IPCFrame parse(byte[] framed) {
        try {
            return IPCFrame.parseFrom(Arrays.copyOfRange(framed, 4, framed.length));
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new AssertionError(e);
        }
    }
}
