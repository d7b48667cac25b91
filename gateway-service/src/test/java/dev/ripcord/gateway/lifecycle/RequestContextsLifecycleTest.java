package dev.ripcord.gateway.lifecycle;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.generation.DeadlineExceededException;
import dev.ripcord.gateway.generation.WorkerUnavailableException;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.protocol.CancelReason;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The gateway's part of the lifecycle log: admitted, routed, and exactly one FINISHED with the request's outcome. */
class RequestContextsLifecycleTest {

    private final List<LifecycleEvent> sent = new CopyOnWriteArrayList<>();
    private final LifecyclePublisher log = new LifecyclePublisher("gateway", "g1", 100, sent::add, Clock.systemUTC());
    private final RequestContexts contexts = new RequestContexts(CancelPublisher.discarding(), new CancelProperties(
            CancelPropagation.IN_BAND, false, "ripcord.cancellations", "ripcord.cancellations.dlt", 3, 1,
            Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10), Duration.ofMinutes(10), 100_000, false,
            Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200), "g1"), new SimpleMeterRegistry(),
            Clock.systemUTC(), Duration.ofHours(1), log);

    /** The requests' events, once the log is closed: a clean close ends the process's log with its STOPPED marker. */
    private List<LifecycleEvent> events() {
        log.close(Duration.ofSeconds(10));
        assertThat(sent.getLast().type()).as("a clean close logs STOPPED last").isEqualTo(LifecycleEventType.STOPPED);
        sent.removeLast();
        return List.copyOf(sent);
    }

    /**
     * A cancel that fires on another thread while a leg is being subscribed never reaches the leg's subscriber
     * before its subscription does (the Reactive Streams order): with {@code takeUntilOther} alone, about one such
     * race in 25,000 completed the subscriber first, and downstream operators then lost the end.
     */
    @Test
    void aCancelRacingALegsSubscriptionNeverEndsTheLinkBeforeItsSubscriberHasItsSubscription() throws Exception {
        java.util.concurrent.ExecutorService canceller = java.util.concurrent.Executors.newSingleThreadExecutor();
        int outOfOrder = 0;
        try {
            for (int i = 0; i < 50_000; i++) {
                RequestContext ctx = contexts.open("race-" + i, Duration.ofHours(1));
                java.util.concurrent.CountDownLatch subscribing = new java.util.concurrent.CountDownLatch(1);
                java.util.concurrent.CountDownLatch ended = new java.util.concurrent.CountDownLatch(1);
                java.util.concurrent.atomic.AtomicBoolean subscribed = new java.util.concurrent.atomic.AtomicBoolean();
                java.util.concurrent.atomic.AtomicBoolean completedFirst = new java.util.concurrent.atomic.AtomicBoolean();
                java.util.concurrent.Future<?> cancel = canceller.submit(() -> {
                    subscribing.await();
                    contexts.cancel(ctx, CancelReason.DEADLINE);
                    return null;
                });
                int spins = i % 64;
                reactor.core.publisher.Flux<Integer> leg = reactor.core.publisher.Flux.from(subscriber -> {
                    subscribing.countDown();
                    for (int k = 0; k < spins; k++) {
                        Thread.onSpinWait();
                    }
                    reactor.core.publisher.Flux.<Integer>never().subscribe(subscriber);
                });
                ctx.link(leg).subscribe(new reactor.core.CoreSubscriber<Integer>() {
                    @Override
                    public void onSubscribe(org.reactivestreams.Subscription s) {
                        subscribed.set(true);
                        s.request(1);
                    }

                    @Override
                    public void onNext(Integer t) {
                    }

                    @Override
                    public void onError(Throwable t) {
                        ended.countDown();
                    }

                    @Override
                    public void onComplete() {
                        completedFirst.set(!subscribed.get());
                        ended.countDown();
                    }
                });
                cancel.get();
                assertThat(ended.await(5, java.util.concurrent.TimeUnit.SECONDS)).as("link %d ended", i).isTrue();
                contexts.close(ctx);
                if (completedFirst.get()) {
                    outOfOrder++;
                }
            }
        } finally {
            canceller.shutdownNow();
        }
        assertThat(outOfOrder).as("links completed before their subscriber had its subscription").isZero();
        assertThat(contexts.liveLinks()).isZero();
    }

    @Test
    void aServedRequestIsAdmittedRoutedAndFinishedCompletedWithItsTokens() {
        RequestContext ctx = contexts.open("req-1", Duration.ofMinutes(1));
        contexts.routed("req-1", "decode", "localhost:8082");
        contexts.routed("req-1", "prefill", "localhost:8081");
        contexts.close(ctx, null, 12);

        assertThat(events()).extracting(LifecycleEvent::type).containsExactly(LifecycleEventType.ADMITTED,
                LifecycleEventType.ROUTED, LifecycleEventType.ROUTED, LifecycleEventType.FINISHED);
        LifecycleEvent finished = sent.getLast();
        assertThat(finished.outcome()).isEqualTo(LifecycleOutcome.COMPLETED);
        assertThat(finished.tokens()).isEqualTo(12);
        assertThat(sent.get(1).decodeInstance()).isEqualTo("localhost:8082");
        assertThat(sent.get(2).prefillInstance()).isEqualTo("localhost:8081");
        assertThat(sent).allSatisfy(e -> assertThat(e.service()).isEqualTo("gateway"));
    }

    @Test
    void aWarmUpRequestIsAdmittedWithTheWarmUpMarkAndAUsersWithout() {
        contexts.close(contexts.open("warm-1", "anonymous", Duration.ofMinutes(1), "m", 3, true), null, 1);
        contexts.close(contexts.open("req-3", "anonymous", Duration.ofMinutes(1), "m", 3, false), null, 1);

        List<LifecycleEvent> admitted = events().stream()
                .filter(e -> e.type() == LifecycleEventType.ADMITTED).toList();
        // Events name each request by its internal ID: the client's ID, ':' and a random part.
        assertThat(admitted).extracting(LifecycleEvent::requestId).satisfiesExactly(
                id -> assertThat(id).startsWith("warm-1:"), id -> assertThat(id).startsWith("req-3:"));
        assertThat(admitted).extracting(LifecycleEvent::detail).containsExactly(LifecycleEvent.WARM_UP, null);
    }

    @Test
    void aCancelledRequestFinishesCancelledWithTheCancelsReason() {
        RequestContext ctx = contexts.open("req-2", Duration.ofMinutes(1));
        contexts.cancel(ctx, CancelReason.CLIENT_CANCEL);
        contexts.close(ctx, new RuntimeException("cancelled"), 3);

        LifecycleEvent finished = events().getLast();
        assertThat(finished.type()).isEqualTo(LifecycleEventType.FINISHED);
        assertThat(finished.outcome()).isEqualTo(LifecycleOutcome.CANCELLED);
        assertThat(finished.reason()).isEqualTo(CancelReason.CLIENT_CANCEL);
    }

    @Test
    void aRequestWhoseChoiceFailedAndWhoseOtherChoicesWereCancelledForItFinishesFailed() {
        RequestContext ctx = contexts.open("req-5", Duration.ofMinutes(1));
        contexts.cancel(ctx, CancelReason.UPSTREAM_ERROR);
        contexts.close(ctx, new WorkerUnavailableException("the decode workers are at capacity; retry after 1 s",
                Duration.ofSeconds(1), null), 7);

        LifecycleEvent finished = events().getLast();
        assertThat(finished.type()).isEqualTo(LifecycleEventType.FINISHED);
        assertThat(finished.outcome()).isEqualTo(LifecycleOutcome.FAILED);
        assertThat(finished.detail()).isEqualTo("WorkerUnavailableException");
        assertThat(finished.tokens()).isEqualTo(7);
    }

    @Test
    void aDeadlineIsACancelAndAnyOtherErrorAFailure() {
        contexts.close(contexts.open("req-3", Duration.ofMinutes(1)), new DeadlineExceededException("req-3"), 0);
        contexts.close(contexts.open("req-4", Duration.ofMinutes(1)), new IllegalStateException("boom"), 0);

        List<LifecycleEvent> finished = events().stream().filter(e -> e.type() == LifecycleEventType.FINISHED)
                .toList();
        assertThat(finished).extracting(LifecycleEvent::outcome)
                .containsExactly(LifecycleOutcome.CANCELLED, LifecycleOutcome.FAILED);
        assertThat(finished.getFirst().reason()).isEqualTo(CancelReason.DEADLINE);
    }
}
