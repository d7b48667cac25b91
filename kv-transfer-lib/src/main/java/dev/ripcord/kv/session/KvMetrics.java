package dev.ripcord.kv.session;

import dev.ripcord.kv.SessionState;
import dev.ripcord.kv.Side;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The agent's meters, all tagged {@code agent=<name>}:
 * <ul>
 *   <li>{@code ripcord.kv.bytes} (counter; {@code direction=sent|received}, {@code backend=tcp|shm}): bytes
 *   acknowledged by the receiver (sent) or landed in a region (received);</li>
 *   <li>{@code ripcord.kv.sessions} (counter; {@code side}, {@code outcome=completed|aborted}): sessions
 *   released, by terminal state;</li>
 *   <li>{@code ripcord.kv.abort.latency} (timer; {@code side}): abort requested to session released;</li>
 *   <li>{@code ripcord.kv.write.time} (timer; {@code backend}, {@code phase=transport|acknowledgement}): one
 *   acknowledged write of a send session, in two parts: accepted to its bytes out of the source (the copy into
 *   the receiver's pages, or the kernel taking the last TCP piece), then to its WRITE_ACK read back;</li>
 *   <li>{@code ripcord.kv.lease.expiries} (counter): connections closed because the peer fell silent;</li>
 *   <li>{@code ripcord.kv.connections.refused} (counter): connections the listener closed as it accepted them,
 *   because it held {@code maxConnections} already;</li>
 *   <li>{@code ripcord.kv.live.regions}, {@code ripcord.kv.live.region.bytes}, {@code ripcord.kv.live.sessions},
 *   {@code ripcord.kv.live.session.bytes} (gauges): what is held now.</li>
 * </ul>
 */
public final class KvMetrics {
    public final AtomicLong liveRegions = new AtomicLong();
    public final AtomicLong liveRegionBytes = new AtomicLong();
    public final AtomicLong liveSessions = new AtomicLong();
    public final AtomicLong liveSessionBytes = new AtomicLong();

    private final MeterRegistry registry;
    private final List<Meter> meters = new ArrayList<>();
    private final Counter sentTcp;
    private final Counter sentShm;
    private final Counter receivedTcp;
    private final Counter receivedShm;
    private final Counter senderCompleted;
    private final Counter senderAborted;
    private final Counter receiverCompleted;
    private final Counter receiverAborted;
    private final Timer senderAbortLatency;
    private final Timer receiverAbortLatency;
    private final Timer writeTransportTcp;
    private final Timer writeTransportShm;
    private final Timer writeAckTcp;
    private final Timer writeAckShm;
    private final Counter leaseExpiries;
    private final Counter connectionsRefused;

    public KvMetrics(MeterRegistry registry, String agent) {
        this.registry = registry;
        sentTcp = keep(Counter.builder("ripcord.kv.bytes").baseUnit("bytes").tags("agent", agent, "direction",
                "sent", "backend", "tcp").register(registry));
        sentShm = keep(Counter.builder("ripcord.kv.bytes").baseUnit("bytes").tags("agent", agent, "direction",
                "sent", "backend", "shm").register(registry));
        receivedTcp = keep(Counter.builder("ripcord.kv.bytes").baseUnit("bytes").tags("agent", agent, "direction",
                "received", "backend", "tcp").register(registry));
        receivedShm = keep(Counter.builder("ripcord.kv.bytes").baseUnit("bytes").tags("agent", agent, "direction",
                "received", "backend", "shm").register(registry));
        senderCompleted = keep(Counter.builder("ripcord.kv.sessions").tags("agent", agent, "side", "sender",
                "outcome", "completed").register(registry));
        senderAborted = keep(Counter.builder("ripcord.kv.sessions").tags("agent", agent, "side", "sender",
                "outcome", "aborted").register(registry));
        receiverCompleted = keep(Counter.builder("ripcord.kv.sessions").tags("agent", agent, "side", "receiver",
                "outcome", "completed").register(registry));
        receiverAborted = keep(Counter.builder("ripcord.kv.sessions").tags("agent", agent, "side", "receiver",
                "outcome", "aborted").register(registry));
        senderAbortLatency = keep(Timer.builder("ripcord.kv.abort.latency").tags("agent", agent, "side", "sender")
                .register(registry));
        receiverAbortLatency = keep(Timer.builder("ripcord.kv.abort.latency").tags("agent", agent, "side",
                "receiver").register(registry));
        writeTransportTcp = keep(Timer.builder("ripcord.kv.write.time").tags("agent", agent, "backend", "tcp",
                "phase", "transport").register(registry));
        writeTransportShm = keep(Timer.builder("ripcord.kv.write.time").tags("agent", agent, "backend", "shm",
                "phase", "transport").register(registry));
        writeAckTcp = keep(Timer.builder("ripcord.kv.write.time").tags("agent", agent, "backend", "tcp",
                "phase", "acknowledgement").register(registry));
        writeAckShm = keep(Timer.builder("ripcord.kv.write.time").tags("agent", agent, "backend", "shm",
                "phase", "acknowledgement").register(registry));
        leaseExpiries = keep(Counter.builder("ripcord.kv.lease.expiries").tags("agent", agent).register(registry));
        connectionsRefused = keep(Counter.builder("ripcord.kv.connections.refused").tags("agent", agent)
                .register(registry));
        keep(Gauge.builder("ripcord.kv.live.regions", liveRegions, AtomicLong::get).tags("agent", agent)
                .register(registry));
        keep(Gauge.builder("ripcord.kv.live.region.bytes", liveRegionBytes, AtomicLong::get).baseUnit("bytes")
                .tags("agent", agent).register(registry));
        keep(Gauge.builder("ripcord.kv.live.sessions", liveSessions, AtomicLong::get).tags("agent", agent)
                .register(registry));
        keep(Gauge.builder("ripcord.kv.live.session.bytes", liveSessionBytes, AtomicLong::get).baseUnit("bytes")
                .tags("agent", agent).register(registry));
    }

    public void bytes(boolean sent, boolean sharedMemory, long n) {
        (sent ? (sharedMemory ? sentShm : sentTcp) : (sharedMemory ? receivedShm : receivedTcp)).increment(n);
    }

    public void sessionReleased(Side side, SessionState terminal, long abortStartNanos) {
        boolean completed = terminal == SessionState.COMPLETED;
        if (side == Side.SENDER) {
            (completed ? senderCompleted : senderAborted).increment();
        } else {
            (completed ? receiverCompleted : receiverAborted).increment();
        }
        if (!completed && abortStartNanos != 0) {
            (side == Side.SENDER ? senderAbortLatency : receiverAbortLatency)
                    .record(System.nanoTime() - abortStartNanos, TimeUnit.NANOSECONDS);
        }
    }

    /**
     * A write was acknowledged: accepted at {@code postedNanos}, its bytes out of the source at {@code outNanos}
     * (0 when not seen: then the whole time counts as transport), acknowledged at {@code ackedNanos}.
     */
    public void writeAcknowledged(boolean sharedMemory, long postedNanos, long outNanos, long ackedNanos) {
        long out = outNanos == 0 || outNanos > ackedNanos ? ackedNanos : Math.max(outNanos, postedNanos);
        (sharedMemory ? writeTransportShm : writeTransportTcp).record(out - postedNanos, TimeUnit.NANOSECONDS);
        (sharedMemory ? writeAckShm : writeAckTcp).record(ackedNanos - out, TimeUnit.NANOSECONDS);
    }

    public void leaseExpired() {
        leaseExpiries.increment();
    }

    public void connectionRefused() {
        connectionsRefused.increment();
    }

    /** Removes this agent's meters so a closed agent leaves no gauges behind in a shared registry. */
    public void close() {
        meters.forEach(registry::remove);
    }

    private <M extends Meter> M keep(M meter) {
        meters.add(meter);
        return meter;
    }
}
