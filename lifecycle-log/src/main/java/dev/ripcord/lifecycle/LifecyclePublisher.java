package dev.ripcord.lifecycle;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.cancel.Sabotage;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A service's one way onto the lifecycle log. {@link #emit} stamps a draft (service, instance, the next sequence
 * number, the time) and offers it to a bounded queue; one daemon thread hands queued events to the
 * {@link LifecycleSink}.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>{@link #emit} never blocks and never throws: engine loops and event-loop threads call it. When the queue is
 *       full the event is dropped and counted ({@link #dropped()}).</li>
 *   <li>Sequence numbers are assigned in call order, from 1, without gaps; a dropped event keeps its number, so a
 *       reader sees the gap. The first time the queue has room again, the publisher's thread emits one
 *       {@link LifecycleEventType#DROPPED} marker with the number of events lost and the range of their sequence
 *       numbers, so that the audit reports "N events lost on instance X between seq a and b" instead of violations
 *       it cannot judge.</li>
 *   <li>Callers that need the log's order to match an order they hold (a journal, a monitor) call {@link #emit}
 *       while holding it: the sequence number is taken inside the call.</li>
 *   <li>With a heartbeat interval, every interval in which it took a sequence number the publisher's thread emits
 *       a {@link LifecycleEventType#HEARTBEAT} (the high-water mark), so that events lost after the last one a
 *       reader saw show as a gap too.</li>
 *   <li>Nothing is lost quietly: events dropped (queue full, or emitted after {@link #close}) and sends that failed
 *       are counted ({@link #bindTo}: {@code ripcord.lifecycle.events.dropped{reason}},
 *       {@code ripcord.lifecycle.send.failures}) and logged at WARN, at most once per {@link #WARN_EVERY} per
 *       kind, with the totals.</li>
 *   <li>{@link #close} delivers what is queued, for at most the given time, then closes the sink.</li>
 * </ul>
 */
public final class LifecyclePublisher implements AutoCloseable, MeterBinder {

    private static final Logger log = LoggerFactory.getLogger(LifecyclePublisher.class);

    private static final LifecyclePublisher DISABLED = new LifecyclePublisher();

    private final String service;
    private final String instance;
    /** This process's own ID on the log, new at every start (see {@link LifecycleEvent#incarnation()}). */
    private final String incarnation = java.util.HexFormat.of().toHexDigits(
            java.util.concurrent.ThreadLocalRandom.current().nextLong());
    private final Clock clock;
    private final BlockingQueue<LifecycleEvent> queue;
    private final LifecycleSink sink;
    private final Thread thread;
    private final AtomicLong nextSeq = new AtomicLong(1);
    private final AtomicLong droppedTotal = new AtomicLong();
    private final AtomicLong emitted = new AtomicLong();
    private final AtomicLong droppedAfterClose = new AtomicLong();
    private final AtomicLong sinkFailures = new AtomicLong();
    private final RateLimitedWarning dropWarning = new RateLimitedWarning();
    private final RateLimitedWarning failureWarning = new RateLimitedWarning();
    /** How often a heartbeat is due; zero: none. */
    private final Duration heartbeat;
    /** The clock's time of the last heartbeat, and the next sequence number then; the publisher's thread only. */
    private java.time.Instant lastHeartbeat;
    private long seqAtHeartbeat = 1;
    /** Drops not yet reported by a marker: count and seq range, guarded by {@code this}. */
    private long pendingDrops;
    private long pendingFrom;
    private long pendingTo;
    private volatile boolean closed;

    private LifecyclePublisher() {
        this.service = "none";
        this.instance = "none";
        this.clock = Clock.systemUTC();
        this.queue = null;
        this.sink = null;
        this.thread = null;
        this.heartbeat = Duration.ZERO;
    }

    /**
     * @param service  {@code gateway}, {@code prefill} or {@code decode}
     * @param instance this process's instance ID
     * @param capacity events the queue holds before it drops
     */
    public LifecyclePublisher(String service, String instance, int capacity, LifecycleSink sink, Clock clock) {
        this(service, instance, capacity, sink, clock, Duration.ZERO);
    }

    /**
     * @param service   {@code gateway}, {@code prefill} or {@code decode}
     * @param instance  this process's instance ID
     * @param capacity  events the queue holds before it drops
     * @param heartbeat how often a {@link LifecycleEventType#HEARTBEAT} is due (when a sequence number was taken
     *                  since the last); zero for none
     */
    public LifecyclePublisher(String service, String instance, int capacity, LifecycleSink sink, Clock clock,
                              Duration heartbeat) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1: " + capacity);
        }
        this.service = Objects.requireNonNull(service, "service");
        this.instance = Objects.requireNonNull(instance, "instance");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.sink = Objects.requireNonNull(sink, "sink");
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.heartbeat = Objects.requireNonNull(heartbeat, "heartbeat");
        this.lastHeartbeat = clock.instant();
        this.thread = Thread.ofPlatform().daemon().name("ripcord-lifecycle-" + service).unstarted(this::run);
        thread.start();
    }

    /** A publisher that records nothing ({@code ripcord.lifecycle.enabled=false}). */
    public static LifecyclePublisher disabled() {
        return DISABLED;
    }

    public boolean isEnabled() {
        return queue != null;
    }

    public String service() {
        return service;
    }

    public String instance() {
        return instance;
    }

    /** This process's incarnation on the log. */
    public String incarnation() {
        return incarnation;
    }

    /** Stamps and queues {@code draft}; drops (and counts) it when the queue is full. Never blocks, never throws. */
    public void emit(LifecycleEvent draft) {
        // DROP_EVENTS: a bench-only sabotage (docs/operations.md), refused outside a stack the fault bench started.
        if (queue == null || draft == null || Sabotage.DROP_EVENTS.armed()) {
            return;
        }
        if (closed) {
            afterClose(draft);
            return;
        }
        LifecycleEvent event;
        boolean offered;
        synchronized (this) { // the seq and the offer together, so that the queue holds events in seq order
            if (closed) {
                afterClose(draft); // after the STOPPED marker: nothing more from this incarnation
                return;
            }
            long seq = nextSeq.getAndIncrement();
            event = draft.stamped(service, instance, incarnation, seq, clock.instant());
            offered = queue.offer(event);
            if (!offered) {
                if (pendingDrops == 0) {
                    pendingFrom = seq;
                }
                pendingDrops++;
                pendingTo = seq;
            }
        }
        if (offered) {
            emitted.incrementAndGet();
        } else {
            droppedTotal.incrementAndGet();
            dropWarning.warn("lifecycle log: dropped {} event(s) since start, the queue was full ({} after close)",
                    droppedTotal.get(), droppedAfterClose.get());
        }
    }

    private void afterClose(LifecycleEvent draft) {
        droppedAfterClose.incrementAndGet();
        dropWarning.warn("lifecycle log: {} event(s) emitted after the publisher closed were not published (last: {} "
                + "of {})", droppedAfterClose.get(), draft.type(), draft.requestId());
    }

    /** Events emitted after {@link #close}, not published. */
    public long droppedAfterClose() {
        return droppedAfterClose.get();
    }

    /** Sends the sink refused (threw) or failed afterwards ({@link LifecycleSink#failed}), since start. */
    public long sendFailures() {
        return sinkFailures.get() + (sink == null ? 0 : sink.failed());
    }

    /**
     * {@code ripcord.lifecycle.events.emitted}, {@code ripcord.lifecycle.events.dropped} ({@code reason}
     * {@code queue-full} or {@code after-close}) and {@code ripcord.lifecycle.send.failures}, tagged with the
     * service. Spring binds it when the publisher is a bean.
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        if (queue == null) {
            return;
        }
        FunctionCounter.builder("ripcord.lifecycle.events.emitted", this, LifecyclePublisher::emitted)
                .tag("service", service).description("lifecycle events queued for the sink").register(registry);
        FunctionCounter.builder("ripcord.lifecycle.events.dropped", this, LifecyclePublisher::dropped)
                .tag("service", service).tag("reason", "queue-full")
                .description("lifecycle events dropped, and why").register(registry);
        FunctionCounter.builder("ripcord.lifecycle.events.dropped", this, LifecyclePublisher::droppedAfterClose)
                .tag("service", service).tag("reason", "after-close")
                .description("lifecycle events dropped, and why").register(registry);
        FunctionCounter.builder("ripcord.lifecycle.send.failures", this, LifecyclePublisher::sendFailures)
                .tag("service", service).description("lifecycle events the sink failed to send").register(registry);
    }

    /** Events dropped because the queue was full, since start. */
    public long dropped() {
        return droppedTotal.get();
    }

    /** Events queued for the sink since start. */
    public long emitted() {
        return emitted.get();
    }

    /** Events waiting for the publisher's thread. */
    public int queued() {
        return queue == null ? 0 : queue.size();
    }

    private void run() {
        while (!closed || !queue.isEmpty()) {
            LifecycleEvent next;
            try {
                next = queue.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                if (closed) {
                    break;
                }
                continue;
            }
            if (next != null) {
                gather();
                deliver(next);
                for (LifecycleEvent more = queue.poll(); more != null; more = queue.poll()) {
                    deliver(more);
                }
            }
            reportDrops();
            heartbeat();
        }
        // Closed, and everything delivered: the incarnation's last event says it stopped cleanly. Not when the
        // close's grace ran out first (interrupted, events left): the log then ends as a crash's would.
        synchronized (this) {
            if (closed && queue.isEmpty() && pendingDrops == 0 && !Thread.currentThread().isInterrupted()) {
                deliver(LifecycleEvent.of(LifecycleEventType.STOPPED, null)
                        .stamped(service, instance, incarnation, nextSeq.getAndIncrement(), clock.instant()));
            }
        }
    }

    /**
     * Lets the events of the moment gather before they are sent ({@link #GATHER}), unless closing. A request emits
     * its events a few milliseconds apart, in every service, mostly before its first token: sent one by one, each
     * woke this thread and the producer's, and reached the broker in a produce request of its own, all on the cores
     * that were computing that first token (on 2 cores, the lifecycle log cost a request sent alone 4 ms of its
     * time to first token). Gathered, a request's events leave together, after its first token.
     */
    private void gather() {
        if (closed) {
            return;
        }
        try {
            Thread.sleep(GATHER);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // a close whose grace ran out: deliver what is here, then stop
        }
    }

    /** How long the publisher lets events gather after the first of a batch. */
    static final Duration GATHER = Duration.ofMillis(50);

    /** Queues a DROPPED marker for drops not yet reported, when the queue has room for it. */
    private void reportDrops() {
        synchronized (this) {
            if (pendingDrops == 0 || queue.remainingCapacity() == 0) {
                return;
            }
            long seq = nextSeq.getAndIncrement();
            LifecycleEvent marker = LifecycleEvent.of(LifecycleEventType.DROPPED, null)
                    .withDropped(pendingDrops, pendingFrom, pendingTo)
                    .stamped(service, instance, incarnation, seq, clock.instant());
            if (queue.offer(marker)) {
                log.warn("lifecycle log: dropped {} events (seq {}..{}): the queue was full", pendingDrops,
                        pendingFrom, pendingTo);
                pendingDrops = 0;
            }
        }
    }

    /**
     * Queues a {@link LifecycleEventType#HEARTBEAT} when one is due: the interval has passed on the clock and a
     * sequence number was taken since the last one (an idle process sends none).
     */
    private void heartbeat() {
        if (heartbeat.isZero() || closed) {
            return;
        }
        java.time.Instant now = clock.instant();
        if (now.isBefore(lastHeartbeat.plus(heartbeat))) {
            return;
        }
        synchronized (this) {
            if (closed || nextSeq.get() == seqAtHeartbeat || queue.remainingCapacity() == 0) {
                return;
            }
            // Room was checked under the lock that every offer takes, and only this thread takes from the queue:
            // the offer succeeds, and the heartbeat's seq is never a gap of its own.
            queue.offer(LifecycleEvent.of(LifecycleEventType.HEARTBEAT, null)
                    .stamped(service, instance, incarnation, nextSeq.getAndIncrement(), now));
            seqAtHeartbeat = nextSeq.get();
            lastHeartbeat = now;
        }
    }

    private void deliver(LifecycleEvent event) {
        try {
            sink.send(event);
        } catch (RuntimeException e) {
            sinkFailures.incrementAndGet();
            failureWarning.warn("lifecycle log: the sink refused {} event(s) since start (last: {}: {})",
                    sendFailures(), event, e.toString());
        }
    }

    /** How often each kind of loss is logged at WARN, at most. */
    static final Duration WARN_EVERY = Duration.ofSeconds(10);

    /** One WARN per {@link #WARN_EVERY}, the rest counted only (the metrics have them all). Thread-safe. */
    static final class RateLimitedWarning {
        private final AtomicLong next = new AtomicLong(Long.MIN_VALUE);

        void warn(String format, Object... args) {
            long now = System.nanoTime();
            long due = next.get();
            if ((due == Long.MIN_VALUE || now - due >= 0) && next.compareAndSet(due, now + WARN_EVERY.toNanos())) {
                log.warn(format, args);
            }
        }
    }

    /**
     * Delivers what is queued, then the {@link LifecycleEventType#STOPPED} marker, then closes the sink, all within
     * {@code grace}: the sink's close (a producer flushing its sends in flight) gets what the delivery left of it,
     * and at least a tenth of it. With the broker away a stop takes the grace once, not twice. Idempotent.
     */
    public void close(Duration grace) {
        if (queue == null || closed) {
            return;
        }
        synchronized (this) { // no emit takes a seq after this: the STOPPED marker is the incarnation's last
            closed = true;
        }
        long deadline = System.nanoTime() + grace.toNanos();
        try {
            thread.join(grace);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        thread.interrupt();
        sink.close(sinkCloseTimeout(grace, deadline - System.nanoTime()));
    }

    /** What the sink's close gets: the {@code leftNanos} of {@code grace}, at least a tenth of it, at most all. */
    static Duration sinkCloseTimeout(Duration grace, long leftNanos) {
        long floor = grace.toNanos() / 10;
        return Duration.ofNanos(Math.min(grace.toNanos(), Math.max(floor, leftNanos)));
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(5));
    }
}
