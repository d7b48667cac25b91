package dev.ripcord.prefill.prefix;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import dev.ripcord.engine.PrefixCacheListener;
import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The prefill worker's {@link PrefixCacheListener}: turns the engine's cache changes into {@link PrefixCacheEvent}s
 * on the prefix-cache topic, for the gateways' cache-aware routing.
 *
 * <p>Design note. The engine calls the listener from its compute threads, so a call only offers the change to a
 * bounded queue and returns; one publisher thread stamps each change with the worker's generation and the next
 * sequence number and hands it to the {@link Sink} (the Kafka producer, which may block there on metadata or a
 * full buffer, never on a compute thread).
 *
 * <p>A change that cannot be published (the queue is full, or the sink reports a failed send) leaves the gateways'
 * picture of this worker wrong: a lost {@code REMOVED} would keep routing requests here for pages it no longer
 * holds. So a loss is treated as a gap: at its next chance the publisher thread throws away whatever is still
 * queued, starts a new generation and publishes {@code CLEARED}, after which gateways know only the pages stored
 * from then on (a subset of what the cache holds, never more). A failed send also leaves a hole in the sequence
 * numbers, which makes gateways distrust this worker's entries until that {@code CLEARED}.
 *
 * <p>Events are published from the moment {@link #start} names the worker (its HTTP port is known only once the
 * server listens); changes before that wait in the queue. The first event is always a {@code CLEARED}.
 */
public final class CacheEventPublisher implements PrefixCacheListener, AutoCloseable {

    /** Where stamped events go; {@code failed} is called, from any thread, for a send that did not succeed. */
    public interface Sink extends AutoCloseable {
        void send(PrefixCacheEvent event, Consumer<Throwable> failed);

        /** Releases the sink (flushing what it holds, within a bound); called once the publisher thread stopped. */
        @Override
        default void close() {
        }
    }

    private static final Logger log = LoggerFactory.getLogger(CacheEventPublisher.class);
    private static final long[] NO_KEYS = new long[0];

    private record Change(PrefixCacheEvent.Kind kind, long[] keys) {
    }

    private final BlockingQueue<Change> queue;
    private final int pageTokens;
    private final Sink sink;
    private final AtomicBoolean gap = new AtomicBoolean();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong published = new AtomicLong();
    private final Counter droppedCounter;
    private final Counter publishedCounter;
    private final Object startLock = new Object();
    private volatile Thread thread;
    private volatile boolean running = true;
    /** The publisher thread's own: the current generation and the last sequence number used. */
    private long generation;
    private long seq;
    private String workerId;

    /**
     * @param capacity   changes the queue holds for the publisher thread
     * @param pageTokens the engine's tokens per page, carried on every event
     */
    public CacheEventPublisher(int capacity, int pageTokens, Sink sink, MeterRegistry meters) {
        this.queue = new ArrayBlockingQueue<>(capacity);
        this.pageTokens = pageTokens;
        this.sink = Objects.requireNonNull(sink, "sink");
        this.droppedCounter = Counter.builder("ripcord.prefix.cache.events.dropped")
                .description("prefix-cache changes not published (queue full, a failed send, or thrown away after "
                        + "such a loss); each loss starts a new generation")
                .register(meters);
        this.publishedCounter = Counter.builder("ripcord.prefix.cache.events.published")
                .description("prefix-cache events handed to Kafka").register(meters);
        queue.offer(new Change(PrefixCacheEvent.Kind.CLEARED, NO_KEYS)); // gateways forget any earlier life of ours
    }

    /** Starts publishing as {@code workerId}; only the first call has an effect. */
    public void start(String workerId) {
        synchronized (startLock) {
            if (thread != null || !running) {
                return;
            }
            this.workerId = Objects.requireNonNull(workerId, "workerId");
            thread = Thread.ofPlatform().daemon().name("ripcord-prefix-cache-events").start(this::run);
        }
        log.info("prefix-cache events published as worker {}", workerId);
    }

    @Override
    public void stored(long[] keys) {
        offer(PrefixCacheEvent.Kind.STORED, keys);
    }

    @Override
    public void removed(long[] keys) {
        offer(PrefixCacheEvent.Kind.REMOVED, keys);
    }

    @Override
    public void cleared() {
        offer(PrefixCacheEvent.Kind.CLEARED, NO_KEYS);
    }

    private void offer(PrefixCacheEvent.Kind kind, long[] keys) {
        if (kind != PrefixCacheEvent.Kind.CLEARED && (keys == null || keys.length == 0)) {
            return;
        }
        if (!queue.offer(new Change(kind, kind == PrefixCacheEvent.Kind.CLEARED ? NO_KEYS : keys.clone()))) {
            lost(1);
        }
    }

    private void lost(long count) {
        gap.set(true);
        dropped.addAndGet(count);
        droppedCounter.increment(count);
    }

    private void run() {
        while (true) {
            Change change;
            try {
                change = queue.poll(running ? 100 : 0, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                return;
            }
            if (change == null && !running) {
                return; // closed, and everything offered before is published
            }
            try {
                if (gap.getAndSet(false)) {
                    // Everything still queued was offered before or around the loss: thrown away with it, and the
                    // new generation starts after it.
                    int thrownAway = (change == null ? 0 : 1) + queue.size();
                    queue.clear();
                    if (thrownAway > 0) {
                        dropped.addAndGet(thrownAway);
                        droppedCounter.increment(thrownAway);
                    }
                    log.warn("prefix-cache events: {} change(s) lost since start; starting a new generation so "
                            + "gateways forget this worker's pages until they are stored again", dropped.get());
                    publish(PrefixCacheEvent.Kind.CLEARED, NO_KEYS);
                } else if (change != null) {
                    publish(change.kind(), change.keys());
                }
            } catch (RuntimeException e) {
                lost(0); // the sink threw: whatever it was is lost
                log.warn("prefix-cache events: publishing failed: {}", e.toString());
            }
        }
    }

    private void publish(PrefixCacheEvent.Kind kind, long[] keys) {
        if (kind == PrefixCacheEvent.Kind.CLEARED) {
            generation = ThreadLocalRandom.current().nextLong();
        }
        PrefixCacheEvent event = new PrefixCacheEvent(workerId, generation, ++seq, kind, pageTokens, keys);
        sink.send(event, failure -> {
            lost(1);
            log.warn("prefix-cache events: {} not sent: {}", event, failure.toString());
        });
        published.incrementAndGet();
        publishedCounter.increment();
    }

    /** Changes not published since start. */
    public long dropped() {
        return dropped.get();
    }

    /** Events handed to the sink since start. */
    public long published() {
        return published.get();
    }

    /**
     * Publishes what is queued (for at most two seconds), stops the publisher thread and closes the sink; changes
     * offered afterwards are dropped.
     */
    @Override
    public void close() {
        Thread t;
        synchronized (startLock) {
            running = false;
            t = thread;
        }
        if (t != null) {
            try {
                t.join(Duration.ofSeconds(2));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        sink.close();
    }
}
