package dev.ffmtrace.stress;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

import dev.ffmtrace.tracing.producer.internal.CloseHandshake;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

/**
 * A producer connection's close against its sender thread opening a session
 * ({@link CloseHandshake}, as {@code ProducerConnection} runs it): the closer may
 * interrupt a sender that connects or waits, never one that serves a session.
 */
public final class CloseHandshakeStress {
    private static final Object SESSION = new Object();

    private CloseHandshakeStress() {
    }

    @JCStressTest
    @Description("Invariant: a sender that goes on to serve its session is never one the closer saw no session of"
            + " (and so interrupts); a session the sender serves stays published until it is torn down.")
    @Outcome(id = "1, 0, 1", expect = ACCEPTABLE, desc = "the sender serves; the closer saw its session and shuts it")
    @Outcome(id = "0, 1, 0", expect = ACCEPTABLE, desc = "the sender saw the close and withdrew; the closer interrupts")
    @Outcome(id = "0, 0, 0", expect = ACCEPTABLE,
            desc = "each saw the other: the closer saw the session the sender then withdrew and shut itself")
    @Outcome(id = "1, 1, 1", expect = FORBIDDEN, desc = "a serving sender interrupted: the closer saw no session")
    @Outcome(id = {"1, 0, 0", "1, 1, 0"}, expect = FORBIDDEN, desc = "a served session not published")
    @Outcome(id = {"0, 0, 1", "0, 1, 1"}, expect = FORBIDDEN, desc = "a withdrawn session still published")
    @State
    public static class OpenAgainstClose {
        final CloseHandshake<Object> handshake = new CloseHandshake<>();

        @Actor
        public void sender(III_Result r) {
            r.r1 = handshake.open(SESSION) ? 1 : 0;
        }

        @Actor
        public void closer(III_Result r) {
            handshake.close();
            r.r2 = handshake.unclosed() == null ? 1 : 0;
        }

        @Arbiter
        public void published(III_Result r) {
            r.r3 = handshake.unclosed() == SESSION ? 1 : 0;
        }
    }
}
