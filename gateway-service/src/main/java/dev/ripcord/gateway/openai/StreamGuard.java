package dev.ripcord.gateway.openai;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import dev.ripcord.gateway.generation.CancelCause;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import dev.ripcord.protocol.CancelReason;

/**
 * Bounds what the gateway holds for one streaming response, and gives up on a client that stopped reading.
 *
 * <p>Design note: between the serving core and the response writer sits one small buffer per stream, at most
 * {@link #CAPACITY} events. It reads ahead of the writer by that much and no more: it requests from upstream only
 * as it has room, so when the client reads slowly the backpressure travels up the pipeline to the internal
 * exchange with the decode worker (whose own per-request buffer is bounded by {@code max_tokens}). Nothing between
 * the decode engine and the client's socket can grow without bound, whatever the client does.
 *
 * <p>A stream is <em>stalled</em> when the writer has taken no event for {@code stream-stall-timeout} while one
 * was waiting for it: an event in this buffer, or the end of the stream not yet written out. The writer takes
 * events only while it has fewer than its own bounded number (128) not yet gone into the socket, so this is the
 * client not accepting bytes. A stalled stream is ended: the cancel reason {@link CancelReason#CLIENT_STALLED} is
 * recorded in the generation's {@link CancelCause}, the generation is cancelled (which releases every leg, as for a
 * disconnect), and the client's connection is closed, because a writer blocked on a full socket would otherwise wait
 * forever.
 *
 * <p>Counted, process-wide ({@link Stats}): streams being written, events held now, the highest number of events
 * one stream ever held (never above {@link #CAPACITY}), and streams ended as stalled.
 */
final class StreamGuard {

    /** Events one stream's buffer holds at most. */
    static final int CAPACITY = 32;

    private static final Logger log = LoggerFactory.getLogger(StreamGuard.class);

    private final Duration stallTimeout;
    private final Scheduler timer;
    private final LongSupplier nanoClock;
    private final Stats stats = new Stats();

    StreamGuard(Duration stallTimeout) {
        this(stallTimeout, Schedulers.parallel(), System::nanoTime);
    }

    /** For tests: a virtual-time scheduler and its clock. */
    StreamGuard(Duration stallTimeout, Scheduler timer, LongSupplier nanoClock) {
        if (stallTimeout.isNegative() || stallTimeout.isZero()) {
            throw new IllegalArgumentException("the stall timeout must be positive, got " + stallTimeout);
        }
        this.stallTimeout = stallTimeout;
        this.timer = timer;
        this.nanoClock = nanoClock;
    }

    Stats stats() {
        return stats;
    }

    Duration stallTimeout() {
        return stallTimeout;
    }

    /**
     * A watch over one response.
     *
     * @param requestId       for the log
     * @param cause           where the stall is recorded, before the generation is cancelled
     * @param closeConnection closes the client's connection; called once, when the stream is found stalled
     */
    Watch watch(String requestId, CancelCause cause, Runnable closeConnection) {
        return new Watch(requestId, cause, closeConnection);
    }

    /**
     * One stream: {@link #guard} its events, and {@link #write} its response through it. Single use.
     */
    final class Watch {

        private final String requestId;
        private final CancelCause cause;
        private final Runnable closeConnection;
        private final AtomicInteger held = new AtomicInteger();
        private final AtomicInteger peak = new AtomicInteger();
        private final Sinks.One<Boolean> stalled = Sinks.one();
        private final AtomicBoolean fired = new AtomicBoolean();
        private volatile long lastProgressNanos;
        private volatile boolean ended;
        private volatile boolean endDelivered;

        private Watch(String requestId, CancelCause cause, Runnable closeConnection) {
            this.requestId = requestId;
            this.cause = cause;
            this.closeConnection = closeConnection;
        }

        /**
         * {@code events} through this stream's bounded buffer. Ends (completes) early if the stream stalls; the
         * upstream is then cancelled.
         */
        <T> Flux<T> guard(Flux<T> events) {
            return events
                    .doOnNext(event -> entered())
                    // no fusion: the buffer below must be this stream's own, so the counts above and below are true
                    .hide()
                    .publishOn(Schedulers.immediate(), CAPACITY)
                    .doOnNext(event -> left())
                    .doOnComplete(() -> {
                        endDelivered = true;
                        lastProgressNanos = now();
                    })
                    // a stall completes the writer's input and cancels the upstream, dropping what is buffered
                    .takeUntilOther(stalled.asMono());
        }

        /**
         * Runs {@code write} (the response writer subscribed to the {@linkplain #guard guarded} events) while
         * watching for a stall: the watch starts with the write and ends with it.
         */
        Mono<Void> write(Mono<Void> write) {
            return Mono.defer(() -> {
                lastProgressNanos = now();
                stats.live.add(this);
                long periodNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(50), stallTimeout.toNanos() / 4);
                Disposable check = timer.schedulePeriodically(this::check, periodNanos, periodNanos,
                        TimeUnit.NANOSECONDS);
                return write.doFinally(signal -> {
                    check.dispose();
                    ended = true;
                    // What a cancelled buffer still counts (and any event that races in after) dies with the watch.
                    stats.live.remove(this);
                });
            });
        }

        /** Events in this stream's buffer now. */
        int held() {
            return held.get();
        }

        /** The most events this stream's buffer held at once. */
        int peak() {
            return peak.get();
        }

        private void entered() {
            int now = held.incrementAndGet();
            if (now == 1) {
                lastProgressNanos = now(); // the wait for the writer starts with the first waiting event
            }
            peak.accumulateAndGet(now, Math::max);
            stats.peak.accumulateAndGet(now, Math::max);
        }

        private void left() {
            held.decrementAndGet();
            lastProgressNanos = now();
        }

        /** On the timer: is something waiting for the writer, and has it been waiting too long? */
        private void check() {
            boolean waiting = held.get() > 0 || endDelivered;
            if (ended || !waiting || now() - lastProgressNanos < stallTimeout.toNanos()) {
                return;
            }
            if (!fired.compareAndSet(false, true)) {
                return;
            }
            // The reason first: cancelling the generation is what reads it.
            cause.record(CancelReason.CLIENT_STALLED);
            stats.stalled.incrementAndGet();
            log.info("requestId={} client stalled: it accepted no stream event for {} ({} waiting); cancelling the "
                    + "request and closing the connection", requestId, stallTimeout, endDelivered ? "the end"
                    : held.get() + " events");
            stalled.tryEmitValue(Boolean.TRUE);
            closeConnection.run();
        }

        private long now() {
            return nanoClock.getAsLong();
        }
    }

    /**
     * Process-wide counts over every stream's buffer. The gauges of what is held now are sums over the streams being
     * written, so a stream that ends (however it ends, whatever races with its end) stops counting at once.
     */
    static final class Stats {

        private final Set<Watch> live = ConcurrentHashMap.newKeySet();
        private final AtomicInteger peak = new AtomicInteger();
        private final AtomicLong stalled = new AtomicLong();
        private final AtomicLong closed = new AtomicLong();
        private final AtomicLong idleClosed = new AtomicLong();

        /**
         * A client connection closed while its request was being answered (streamed or not): {@code idle} when
         * nothing had been sent on it for the idle-close threshold (a proxy's idle timeout, most likely).
         */
        void departed(boolean idle) {
            (idle ? idleClosed : closed).incrementAndGet();
        }

        /** Streams being written now. */
        int open() {
            return live.size();
        }

        /** Events held in all streams' buffers now. */
        int held() {
            int sum = 0;
            for (Watch watch : live) {
                sum += Math.max(0, watch.held());
            }
            return sum;
        }

        /** The most events one stream's buffer ever held at once (the bound is {@link #CAPACITY}). */
        int peak() {
            return peak.get();
        }

        /** Streams ended because their client stalled. */
        long stalled() {
            return stalled.get();
        }

        void bindTo(MeterRegistry meters) {
            Gauge.builder("ripcord.gateway.stream.open", this, Stats::open)
                    .description("streaming responses being written").register(meters);
            Gauge.builder("ripcord.gateway.stream.buffered", this, Stats::held)
                    .description("events waiting in all streams' buffers for their writer").register(meters);
            Gauge.builder("ripcord.gateway.stream.buffered.peak", peak, AtomicInteger::get)
                    .description("the most events one stream's buffer ever held (bounded by the capacity)")
                    .register(meters);
            Gauge.builder("ripcord.gateway.stream.buffer.capacity", () -> CAPACITY)
                    .description("events one stream's buffer holds at most").register(meters);
            FunctionCounter.builder("ripcord.gateway.stream.stalled", stalled, AtomicLong::get)
                    .description("streams cancelled because the client accepted no bytes for the stall timeout")
                    .register(meters);
            FunctionCounter.builder("ripcord.gateway.client.departures", closed, AtomicLong::get)
                    .tag("kind", "closed")
                    .description("requests whose client connection closed before the answer was complete")
                    .register(meters);
            FunctionCounter.builder("ripcord.gateway.client.departures", idleClosed, AtomicLong::get)
                    .tag("kind", "idle_close")
                    .description("requests whose client connection closed before the answer was complete")
                    .register(meters);
            FunctionCounter.builder("ripcord.gateway.client.departures", stalled, AtomicLong::get)
                    .tag("kind", "stalled")
                    .description("requests whose client connection closed before the answer was complete")
                    .register(meters);
        }
    }
}
