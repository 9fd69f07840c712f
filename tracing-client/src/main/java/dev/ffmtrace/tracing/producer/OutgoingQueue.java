package dev.ffmtrace.tracing.producer;

import dev.ffmtrace.ipc.Reply;
import dev.ffmtrace.protozero.ScatteredHeapBuffer;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;

/**
 * The messages a {@link ProducerConnection}'s sender thread sends, in the order they were
 * asked for: a ring of slots reused from message to message. A commit copies its
 * CommitData into the array its slot kept from earlier commits, so the commit path, which
 * writers take at their full rate, allocates nothing once the ring is as deep as the
 * traffic needs. Other messages, rare, bring arrays of their own.
 *
 * <p>Any thread adds; one thread (the sender) takes: it {@linkplain #take waits for} or
 * {@linkplain #peek peeks} at the oldest message, sends it, then {@linkplain #release
 * releases} its slot; {@link #wake} ends a wait with no message, for the sender to look
 * at why (its connection closed or lost). Commits beyond
 * {@code maxCommits} queued are refused, for the caller to count as dropped.
 *
 * @param <S> what a message is sent over (the connection's session)
 */
final class OutgoingQueue<S> {
    private static final byte[] NO_BYTES = new byte[0];

    /** One message; its fields are the sender's between {@link #take} or {@link #peek} and {@link #release}. */
    static final class Message<S> {
        S session;
        String method;
        /** The request; its first {@code length} bytes are sent. */
        byte[] args = NO_BYTES;
        int length;
        boolean isCommit;
        /** Null: the service's reply is dropped (drop_reply). */
        CompletableFuture<Reply> reply;
        /** The array of this slot's commits, kept across them, and a view of it. */
        private byte[] kept = NO_BYTES;
        private MemorySegment keptSegment = MemorySegment.ofArray(NO_BYTES);
    }

    private final int maxCommits;
    @SuppressWarnings("unchecked")
    private Message<S>[] ring = (Message<S>[]) new Message<?>[16];
    private int head;
    private int count;
    private int commits;
    private boolean senderWaiting;
    /** Set by {@link #wake}, cleared by the {@link #take} it ends. */
    private boolean woken;

    OutgoingQueue(int maxCommits) {
        this.maxCommits = maxCommits;
    }

    /**
     * Queues a CommitData whose request is in {@code request} (copied before this
     * returns); false, queuing nothing, if {@code maxCommits} commits are queued already.
     */
    synchronized boolean addCommit(S session, String method, ScatteredHeapBuffer request) {
        if (commits >= maxCommits) {
            return false;
        }
        Message<S> message = claim();
        int length = Math.toIntExact(request.size());
        if (message.kept.length < length) {
            message.kept = new byte[Math.max(length, Math.max(64, 2 * message.kept.length))];
            message.keptSegment = MemorySegment.ofArray(message.kept);
        }
        request.copyTo(message.keptSegment, 0);
        fill(message, session, method, message.kept, length, true, null);
        commits++;
        return true;
    }

    /** Queues a message other than a commit, with its own request bytes. */
    synchronized void add(S session, String method, byte[] args, CompletableFuture<Reply> reply) {
        fill(claim(), session, method, args, args.length, false, reply);
    }

    /** The oldest message, waiting for one; null if {@link #wake} was called (before or during the wait). */
    synchronized Message<S> take() throws InterruptedException {
        senderWaiting = true;
        try {
            while (count == 0 && !woken) {
                wait();
            }
        } finally {
            senderWaiting = false;
        }
        woken = false;
        return count == 0 ? null : ring[head];
    }

    /** Ends the sender's {@link #take}, now or, if it is not waiting, its next one. */
    synchronized void wake() {
        woken = true;
        notifyAll();
    }

    /** The oldest message, or null. */
    synchronized Message<S> peek() {
        return count == 0 ? null : ring[head];
    }

    /** Frees the slot of {@code message}, the oldest, once it was sent or dropped. */
    synchronized void release(Message<S> message) {
        if (count == 0 || ring[head] != message) {
            throw new IllegalStateException("release of a message that is not the oldest");
        }
        if (message.isCommit) {
            commits--;
        }
        message.session = null;
        message.method = null;
        message.args = NO_BYTES;
        message.reply = null;
        head = (head + 1) % ring.length;
        count--;
    }

    private Message<S> claim() {
        if (count == ring.length) {
            // A full ring: move into one twice as large, the oldest first.
            @SuppressWarnings("unchecked")
            Message<S>[] grown = (Message<S>[]) new Message<?>[2 * ring.length];
            for (int i = 0; i < count; i++) {
                grown[i] = ring[(head + i) % ring.length];
            }
            ring = grown;
            head = 0;
        }
        int tail = (head + count) % ring.length;
        if (ring[tail] == null) {
            ring[tail] = new Message<>();
        }
        return ring[tail];
    }

    private void fill(Message<S> message, S session, String method, byte[] args, int length, boolean isCommit,
                      CompletableFuture<Reply> reply) {
        message.session = session;
        message.method = method;
        message.args = args;
        message.length = length;
        message.isCommit = isCommit;
        message.reply = reply;
        count++;
        if (senderWaiting) {
            notifyAll();
        }
    }
}
