package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.gateway.generation.CancelCause;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.scheduler.VirtualTimeScheduler;

import dev.ripcord.protocol.CancelReason;

/**
 * The stream guard in virtual time: a writer that takes nothing is found stalled after exactly the timeout, the
 * upstream is cancelled with {@code CLIENT_STALLED} recorded first, and the buffer never held more than its
 * capacity; a slow but steady writer, or a generation with nothing to send, is never a stall.
 */
class StreamGuardTest {

    private static final Duration STALL = Duration.ofSeconds(60);

    private VirtualTimeScheduler time;
    private StreamGuard guard;
    private CancelCause cause;
    private AtomicInteger closed;

    @BeforeEach
    void setUp() {
        time = VirtualTimeScheduler.create();
        guard = new StreamGuard(STALL, time, () -> time.now(TimeUnit.NANOSECONDS));
        cause = new CancelCause();
        closed = new AtomicInteger();
    }

    @AfterEach
    void tearDown() {
        time.dispose();
    }

    @Test
    void writerThatTakesNothingMoreIsStalledAfterTheTimeoutAndTheUpstreamIsCancelledWithThatReason() {
        AtomicLong produced = new AtomicLong();
        AtomicReference<CancelReason> reasonAtCancel = new AtomicReference<>();
        Flux<Integer> endless = Flux.<Integer, Integer>generate(() -> 0, (i, sink) -> {
            sink.next(i);
            return i + 1;
        }).doOnNext(i -> produced.incrementAndGet()).doOnCancel(() -> reasonAtCancel.set(cause.reason()));
        StreamGuard.Watch watch = guard.watch("req-stalled", cause, closed::incrementAndGet);
        Writer writer = new Writer(5);

        watch.write(writer.write(watch.guard(endless))).subscribe();

        assertThat(writer.received.get()).isEqualTo(5);
        // the buffer reads ahead by its capacity, no more: 32 pulled, 5 written, 27 waiting
        assertThat(produced.get()).isEqualTo(StreamGuard.CAPACITY);
        assertThat(watch.held()).isEqualTo(StreamGuard.CAPACITY - 5);
        time.advanceTimeBy(STALL.minusSeconds(1));
        assertThat(closed.get()).as("not stalled before the timeout").isZero();
        assertThat(reasonAtCancel.get()).isNull();

        time.advanceTimeBy(Duration.ofSeconds(30));

        assertThat(reasonAtCancel.get()).isEqualTo(CancelReason.CLIENT_STALLED);
        assertThat(closed.get()).isEqualTo(1);
        assertThat(writer.completed.get()).isTrue();
        assertThat(watch.peak()).isLessThanOrEqualTo(StreamGuard.CAPACITY);
        assertThat(produced.get()).as("nothing more pulled while stalled").isEqualTo(StreamGuard.CAPACITY);
        assertThat(guard.stats().stalled()).isEqualTo(1);
        assertThat(guard.stats().peak()).isEqualTo(watch.peak());
        assertThat(guard.stats().held()).isZero();
        assertThat(guard.stats().open()).isZero();
    }

    @Test
    void slowButSteadyWriterIsNeverStalled() {
        StreamGuard.Watch watch = guard.watch("req-slow", cause, closed::incrementAndGet);
        Writer writer = new Writer(0);
        watch.write(writer.write(watch.guard(Flux.range(0, 100)))).subscribe();

        for (int i = 0; i < 100; i++) {
            time.advanceTimeBy(STALL.minusSeconds(1));
            writer.request(1);
        }

        assertThat(writer.received.get()).isEqualTo(100);
        assertThat(writer.completed.get()).isTrue();
        assertThat(closed.get()).isZero();
        assertThat(cause.reason()).isEqualTo(CancelReason.CLIENT_DISCONNECT);
        assertThat(guard.stats().stalled()).isZero();
        assertThat(watch.peak()).isLessThanOrEqualTo(StreamGuard.CAPACITY);
        assertThat(guard.stats().open()).isZero();
        assertThat(guard.stats().held()).isZero();
    }

    @Test
    void generationWithNothingToSendIsNeverAStall() {
        AtomicBoolean cancelled = new AtomicBoolean();
        StreamGuard.Watch watch = guard.watch("req-idle", cause, closed::incrementAndGet);
        Writer writer = new Writer(Long.MAX_VALUE);
        var subscription = watch.write(writer.write(watch.guard(Flux.<Integer>never()
                .doOnCancel(() -> cancelled.set(true))))).subscribe();

        time.advanceTimeBy(Duration.ofHours(1));

        assertThat(closed.get()).isZero();
        assertThat(cancelled.get()).isFalse();
        assertThat(guard.stats().open()).isEqualTo(1);
        subscription.dispose();
        assertThat(cancelled.get()).isTrue();
        assertThat(guard.stats().open()).isZero();
    }

    @Test
    void endOfStreamNeverWrittenOutIsAStall() {
        StreamGuard.Watch watch = guard.watch("req-tail", cause, closed::incrementAndGet);
        // The writer took every event and the end, but its last write never finishes: the client stopped reading.
        Mono<Void> stuckWriter = watch.guard(Flux.range(0, 3)).then(Mono.never());

        watch.write(stuckWriter).subscribe();
        time.advanceTimeBy(STALL.plusSeconds(30));

        assertThat(closed.get()).isEqualTo(1);
        assertThat(cause.reason()).isEqualTo(CancelReason.CLIENT_STALLED);
    }

    /**
     * Regression: an event that raced in after its stream ended (the client left, the upstream was still emitting)
     * stayed counted in the process-wide gauge forever; the load bench found 31 events "held" with no stream open.
     */
    @Test
    void eventArrivingAfterTheStreamEndedIsNotCountedAsHeld() {
        Flux<Integer> emitsAfterCancel = Flux.from(subscriber -> subscriber.onSubscribe(new Subscription() {
            @Override
            public void request(long n) {
                // silent until cancelled
            }

            @Override
            public void cancel() {
                subscriber.onNext(1); // an upstream that was already emitting when the cancel came
            }
        }));
        StreamGuard.Watch watch = guard.watch("req-late", cause, closed::incrementAndGet);
        var subscription = watch.write(new Writer(Long.MAX_VALUE).write(watch.guard(emitsAfterCancel))).subscribe();
        assertThat(guard.stats().open()).isEqualTo(1);

        subscription.dispose();

        assertThat(guard.stats().open()).isZero();
        assertThat(guard.stats().held()).isZero();
    }

    @Test
    void firstRecordedReasonWins() {
        assertThat(cause.reason()).isEqualTo(CancelReason.CLIENT_DISCONNECT);
        assertThat(cause.record(CancelReason.CLIENT_STALLED)).isTrue();
        assertThat(cause.record(CancelReason.CLIENT_DISCONNECT)).isFalse();
        assertThat(cause.reason()).isEqualTo(CancelReason.CLIENT_STALLED);
    }

    /** A response writer whose demand the test controls; its Mono ends when the events end. */
    private static final class Writer {

        final AtomicInteger received = new AtomicInteger();
        final AtomicBoolean completed = new AtomicBoolean();
        private final long initialDemand;
        private volatile Subscription subscription;

        Writer(long initialDemand) {
            this.initialDemand = initialDemand;
        }

        Mono<Void> write(Flux<Integer> events) {
            return Mono.create(sink -> sink.onCancel(events.subscribeWith(new BaseSubscriber<Integer>() {
                @Override
                protected void hookOnSubscribe(Subscription s) {
                    subscription = s;
                    if (initialDemand > 0) {
                        s.request(initialDemand);
                    }
                }

                @Override
                protected void hookOnNext(Integer value) {
                    received.incrementAndGet();
                }

                @Override
                protected void hookOnComplete() {
                    completed.set(true);
                    sink.success();
                }

                @Override
                protected void hookOnError(Throwable failure) {
                    sink.error(failure);
                }
            })));
        }

        void request(long n) {
            subscription.request(n);
        }
    }
}
