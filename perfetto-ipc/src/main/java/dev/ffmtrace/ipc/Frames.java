package dev.ffmtrace.ipc;

import dev.ffmtrace.memory.StreamSocket;
import dev.ffmtrace.perfetto.protos.IPCFrame;
import dev.ffmtrace.protozero.HeapBuffered;
import java.util.List;

/**
 * Encodes the frames a host and a client send, byte for byte as Perfetto's C++ does: the
 * fields Perfetto sets, in declaration order, written by ProtoZero into heap slices
 * (gen_helpers::MessageSerializer), behind a 4-byte little-endian payload size
 * (BufferedFrameDeserializer::Serialize).
 */
final class Frames {
    /** Perfetto's kIPCBufferSize (ipc/basic_types.h): a frame with its header must fit in it. */
    static final int IPC_BUFFER_SIZE = 128 * 1024;
    /** The largest IPCFrame payload a peer accepts. */
    static final int MAX_PAYLOAD = IPC_BUFFER_SIZE - FrameReader.HEADER_SIZE;
    /** Perfetto's reply to a frame that is neither bind, invoke nor peer identity. */
    static final String UNKNOWN_REQUEST = "unknown request";
    private static final int FIRST_SLICE = 256;

    private Frames() {
    }

    static byte[] bindService(long requestId, String serviceName) {
        HeapBuffered<IPCFrame> frame = newFrame();
        frame.get().setRequestId(requestId);
        frame.get().setMsgBindService().setServiceName(serviceName);
        return withHeader(frame);
    }

    /** The reply to a bind: empty when the service is unknown; method ids count from 1. */
    static byte[] bindServiceReply(long requestId, int serviceId, List<String> methodNames) {
        HeapBuffered<IPCFrame> frame = newFrame();
        frame.get().setRequestId(requestId);
        IPCFrame.BindServiceReply reply = frame.get().setMsgBindServiceReply();
        if (methodNames != null) {
            reply.setSuccess(true);
            reply.setServiceId(serviceId);
            int id = 1;
            for (String name : methodNames) {
                IPCFrame.BindServiceReply.MethodInfo info = reply.addMethods();
                info.setId(id++);
                info.setName(name);
            }
        }
        return withHeader(frame);
    }

    /** An invocation as Perfetto's client sends it: drop_reply and args_proto always set. */
    static byte[] invokeMethod(long requestId, int serviceId, int methodId, byte[] args, boolean dropReply) {
        HeapBuffered<IPCFrame> frame = newFrame();
        writeInvokeMethod(frame.get(), requestId, serviceId, methodId, args, args.length, dropReply);
        return withHeader(frame);
    }

    /** {@link #invokeMethod}'s frame, its args the first {@code length} bytes of {@code args}, into {@code frame}. */
    static void writeInvokeMethod(IPCFrame frame, long requestId, int serviceId, int methodId, byte[] args,
                                  int length, boolean dropReply) {
        frame.setRequestId(requestId);
        IPCFrame.InvokeMethod invoke = frame.setMsgInvokeMethod();
        invoke.setServiceId(serviceId);
        invoke.setMethodId(methodId);
        invoke.appendBytes(IPCFrame.InvokeMethod.ARGS_PROTO_FIELD_NUMBER, args, 0, length);
        invoke.setDropReply(dropReply);
    }

    /** The host's answer to an invocation it cannot dispatch: success explicitly false. */
    static byte[] invokeMethodRejected(long requestId) {
        HeapBuffered<IPCFrame> frame = newFrame();
        frame.get().setRequestId(requestId);
        frame.get().setMsgInvokeMethodReply().setSuccess(false);
        return withHeader(frame);
    }

    /**
     * A method's reply: has_more always set; success and reply_proto only on success
     * (HostImpl::ReplyToMethodInvocation).
     */
    static byte[] invokeMethodReply(long requestId, boolean success, boolean hasMore, byte[] replyProto) {
        HeapBuffered<IPCFrame> frame = newFrame();
        writeInvokeMethodReply(frame.get(), requestId, success, hasMore, replyProto, replyProto.length);
        return withHeader(frame);
    }

    static void writeInvokeMethodReply(IPCFrame frame, long requestId, boolean success, boolean hasMore,
                                       byte[] replyProto, int length) {
        frame.setRequestId(requestId);
        IPCFrame.InvokeMethodReply reply = frame.setMsgInvokeMethodReply();
        if (success) {
            reply.setSuccess(true);
        }
        reply.setHasMore(hasMore);
        if (success) {
            reply.appendBytes(IPCFrame.InvokeMethodReply.REPLY_PROTO_FIELD_NUMBER, replyProto, 0, length);
        }
    }

    static byte[] requestError(long requestId, String error) {
        HeapBuffered<IPCFrame> frame = newFrame();
        frame.get().setRequestId(requestId);
        frame.get().setMsgRequestError().setError(error);
        return withHeader(frame);
    }

    static byte[] setPeerIdentity(long requestId, int pid, int uid) {
        HeapBuffered<IPCFrame> frame = newFrame();
        frame.get().setRequestId(requestId);
        IPCFrame.SetPeerIdentity identity = frame.get().setSetPeerIdentity();
        identity.setPid(pid);
        identity.setUid(uid);
        return withHeader(frame);
    }

    /** A relay's SetPeerIdentity: the forwarded producer's pid and uid, and its machine's id hint and name. */
    static byte[] setPeerIdentity(long requestId, int pid, int uid, String machineIdHint, String machineName) {
        HeapBuffered<IPCFrame> frame = newFrame();
        frame.get().setRequestId(requestId);
        IPCFrame.SetPeerIdentity identity = frame.get().setSetPeerIdentity();
        identity.setPid(pid);
        identity.setUid(uid);
        identity.setMachineIdHint(machineIdHint);
        identity.setMachineName(machineName);
        return withHeader(frame);
    }

    /** The payload behind its 4-byte little-endian size; refuses what no peer would accept. */
    static byte[] withHeader(byte[] payload) {
        checkPayloadSize(payload.length);
        byte[] framed = new byte[FrameReader.HEADER_SIZE + payload.length];
        writeHeader(framed, payload.length);
        System.arraycopy(payload, 0, framed, FrameReader.HEADER_SIZE, payload.length);
        return framed;
    }

    static void checkPayloadSize(long size) {
        if (size > MAX_PAYLOAD) {
            throw new IllegalArgumentException("IPC frame of " + size + " bytes exceeds Perfetto's limit of "
                    + MAX_PAYLOAD + " (kIPCBufferSize less the header)");
        }
    }

    static void writeHeader(byte[] framed, int payloadSize) {
        framed[0] = (byte) payloadSize;
        framed[1] = (byte) (payloadSize >>> 8);
        framed[2] = (byte) (payloadSize >>> 16);
        framed[3] = (byte) (payloadSize >>> 24);
    }

    /** Sends a framed frame with its descriptor, if {@code fd >= 0} (it stays the caller's). */
    static void send(StreamSocket socket, byte[] frame, int fd) {
        if (fd >= 0) {
            socket.send(frame, fd);
        } else {
            socket.send(frame);
        }
    }

    /**
     * A frame being written. Most frames are a few dozen bytes: the first slice is small
     * and later ones grow; slice sizes never change the bytes written.
     */
    static HeapBuffered<IPCFrame> newFrame() {
        return new HeapBuffered<>(IPCFrame.FACTORY, FIRST_SLICE, IPC_BUFFER_SIZE);
    }

    private static byte[] withHeader(HeapBuffered<IPCFrame> frame) {
        return withHeader(frame.toByteArray());
    }
}
