package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelSource;

import dev.ripcord.protocol.CancelReason;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.cancel.testing.CancellationLeakExtension;
import dev.ripcord.protocol.InvalidRequestIdException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.mockito.Mockito;

class CancellationRegistryTest {

    /** Every abort a handler saw, in order. */
    record Abort(String requestId, CancelReason reason, CancelSource source) {
    }

    private final AtomicLong nanos = new AtomicLong();
    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final CancellationRegistry registry = new CancellationRegistry(
            new CancellationRegistry.Options(Duration.ofMinutes(10), 1_000), meters, nanos::get);
    private final List<Abort> aborts = new CopyOnWriteArrayList<>();
    private final AbortHandler recorder = (id, reason, source) -> aborts.add(new Abort(id, reason, source));

    @RegisterExtension
    final CancellationLeakExtension leaks = CancellationLeakExtension.afterEachTest(() -> registry);

    @Test
    void cancelWhileLiveAbortsExactlyOnce() {
        try (Registration registration = registry.register("req-1", recorder)) {
            assertThat(registry.cancel("req-1", CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND))
                    .isEqualTo(CancelOutcome.ABORTED);
            assertThat(aborts).containsExactly(
                    new Abort("req-1", CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND));
            assertThat(registration.isCancelled()).isTrue();
            assertThat(registration.cancelReason()).contains(CancelReason.CLIENT_DISCONNECT);
        }
    }

    @Test
    void isRegisteredUntilTheRegistrationIsCompletedAbortedOrNot() {
        assertThat(registry.isRegistered("req-1")).isFalse();
        Registration live = registry.register("req-1", recorder);
        assertThat(registry.isRegistered("req-1")).isTrue();
        registry.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
        assertThat(registry.isRegistered("req-1")).as("aborted, not yet completed").isTrue();
        live.complete();
        assertThat(registry.isRegistered("req-1")).as("its cancel is kept as a tombstone").isFalse();

        registry.register("req-2", recorder).complete();
        assertThat(registry.isRegistered("req-2")).isFalse();
        registry.cancel("req-3", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
        assertThat(registry.isRegistered("req-3")).as("a tombstone only").isFalse();
    }

    @Test
    void cancelBeforeRegistrationAbortsExactlyOnce() {
        assertThat(registry.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.TOMBSTONED);
        assertThat(aborts).isEmpty();
        assertThat(registry.isCancelled("req-1")).isTrue();

        Registration registration = registry.register("req-1", recorder);

        assertThat(aborts).containsExactly(new Abort("req-1", CancelReason.DEADLINE, CancelSource.TOMBSTONE));
        assertThat(registration.isCancelled()).isTrue();
        assertThat(registration.cancelReason()).contains(CancelReason.DEADLINE);
        assertThat(registry.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        assertThat(registration.complete()).isFalse();
        assertThat(aborts).hasSize(1);
    }

    /**
     * Regression: register() used to decide "abort at once" by re-reading the new registration's state after
     * {@code compute} returned. A cancel landing in that gap, still running its abort, had moved the fresh LIVE
     * registration to ABORTING, and register ran the abort a second time. The gap is nanoseconds wide, so this test
     * puts the cancel there on purpose: the registry bumps {@code ripcord.cancel.registrations.created} right after
     * {@code compute}, and this meter registry's counter starts the cancel on another thread and waits until that
     * thread is inside the abort handler.
     */
    @Test
    void aCancelLandingJustAfterRegisterIsAbortedOnlyOnce() throws Exception {
        CancellationRegistry[] target = new CancellationRegistry[1];
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<CompletableFuture<CancelOutcome>> cancel = new AtomicReference<>();
        SimpleMeterRegistry hooked = new SimpleMeterRegistry() {
            @Override
            protected Counter newCounter(Meter.Id id) {
                Counter real = super.newCounter(id);
                if (!id.getName().equals("ripcord.cancel.registrations.created")) {
                    return real;
                }
                return new Counter() {
                    @Override
                    public void increment(double amount) {
                        real.increment(amount);
                        cancel.set(CompletableFuture.supplyAsync(() -> target[0].cancel("req-1",
                                CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA)));
                        await(inHandler);
                    }

                    @Override
                    public double count() {
                        return real.count();
                    }

                    @Override
                    public Meter.Id getId() {
                        return real.getId();
                    }
                };
            }
        };
        target[0] = new CancellationRegistry(CancellationRegistry.Options.defaults(), hooked);
        AbortHandler firstOneBlocks = (id, reason, source) -> {
            recorder.onAbort(id, reason, source);
            if (aborts.size() == 1) {
                inHandler.countDown();
                await(release);
            }
        };

        Registration registration = target[0].register("req-1", firstOneBlocks);
        release.countDown();

        assertThat(cancel.get().get(30, TimeUnit.SECONDS)).isEqualTo(CancelOutcome.ABORTED);
        assertThat(aborts).containsExactly(new Abort("req-1", CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA));
        assertThat(registration.isCancelled()).isTrue();
        registration.complete();
        target[0].assertNoLiveRegistrations();
    }

    private static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    @Test
    void replayedCancelAfterAbortChangesNothing() {
        Registration registration = registry.register("req-1", recorder);
        registry.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);

        assertThat(registry.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        assertThat(registry.cancel("req-1", CancelReason.SHUTDOWN, CancelSource.SHUTDOWN))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);

        assertThat(aborts).hasSize(1);
        assertThat(registration.cancelReason()).contains(CancelReason.CLIENT_CANCEL);
        registration.complete();
    }

    @Test
    void replayedCancelOfATombstoneChangesNothing() {
        registry.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA);
        assertThat(registry.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        assertThat(registry.tombstones()).isEqualTo(1);

        try (Registration ignored = registry.register("req-1", recorder)) {
            assertThat(aborts).containsExactly(new Abort("req-1", CancelReason.DEADLINE, CancelSource.TOMBSTONE));
        }
    }

    @Test
    void replayedCancelAfterAnAbortedRequestCompletedIsStillRecognised() {
        Registration registration = registry.register("req-1", recorder);
        registry.cancel("req-1", CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
        registration.complete();

        // The Kafka copy of the same cancel arrives after the request is gone.
        assertThat(registry.cancel("req-1", CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        assertThat(aborts).hasSize(1);
        assertThat(registry.liveRegistrations()).isZero();
    }

    @Test
    void cancelAfterNormalCompletionAbortsNothing() {
        Registration registration = registry.register("req-1", recorder);
        assertThat(registration.complete()).isTrue();

        assertThat(registry.cancel("req-1", CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.TOMBSTONED);

        assertThat(aborts).isEmpty();
        assertThat(registration.isCancelled()).isFalse();
        assertThat(registry.liveRegistrations()).isZero();
    }

    @Test
    void everySourceTogetherStillAbortsOnce() {
        try (Registration ignored = registry.register("req-1", recorder)) {
            for (CancelSource source : List.of(CancelSource.KAFKA, CancelSource.IN_BAND, CancelSource.DEADLINE,
                    CancelSource.SHUTDOWN, CancelSource.EXPLICIT)) {
                registry.cancel("req-1", CancelReason.UPSTREAM_ERROR, source);
            }
        }
        assertThat(aborts).containsExactly(new Abort("req-1", CancelReason.UPSTREAM_ERROR, CancelSource.KAFKA));
    }

    @Test
    void completeIsIdempotentAndWinsOverLaterCancels() {
        Registration registration = registry.register("req-1", recorder);
        assertThat(registration.complete()).isTrue();
        assertThat(registration.complete()).isFalse();
        registration.close();
        assertThat(registry.liveRegistrations()).isZero();
        assertThat(aborts).isEmpty();
    }

    @Test
    void completingFromInsideTheAbortHandlerIsSafe() {
        Registration[] self = new Registration[1];
        self[0] = registry.register("req-1", (id, reason, source) -> {
            aborts.add(new Abort(id, reason, source));
            assertThat(self[0].complete()).isFalse();
        });
        registry.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.EXPLICIT);
        assertThat(aborts).hasSize(1);
        assertThat(registry.liveRegistrations()).isZero();
    }

    @Test
    void abortHandlerMayCallBackIntoTheRegistryForTheSameAndOtherIds() {
        Registration registration = registry.register("req-1", (id, reason, source) -> {
            aborts.add(new Abort(id, reason, source));
            assertThat(registry.cancel("req-1", reason, CancelSource.EXPLICIT))
                    .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
            registry.cancel("req-2", reason, CancelSource.EXPLICIT);
            registry.register("req-3", recorder).complete();
        });
        registry.cancel("req-1", CancelReason.UPSTREAM_ERROR, CancelSource.IN_BAND);
        registration.complete();
        assertThat(aborts).hasSize(1);
        assertThat(registry.isCancelled("req-2")).isTrue();
    }

    @Test
    void aSlowAbortHandlerDoesNotBlockOtherRequests() throws Exception {
        CountDownLatch inHandler = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Registration slow = registry.register("req-slow", (id, reason, source) -> {
            inHandler.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        CompletableFuture<CancelOutcome> aborting = CompletableFuture.supplyAsync(
                () -> registry.cancel("req-slow", CancelReason.DEADLINE, CancelSource.DEADLINE));
        assertThat(inHandler.await(30, TimeUnit.SECONDS)).isTrue();

        // While that handler is stuck: other IDs, and replays of the same ID, go through.
        try (Registration other = registry.register("req-other", recorder)) {
            assertThat(registry.cancel("req-other", CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND))
                    .isEqualTo(CancelOutcome.ABORTED);
        }
        assertThat(registry.cancel("req-slow", CancelReason.DEADLINE, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        assertThat(slow.isCancelled()).isTrue();

        release.countDown();
        assertThat(aborting.get(30, TimeUnit.SECONDS)).isEqualTo(CancelOutcome.ABORTED);
        slow.complete();
    }

    @Test
    void registeringAnIdThatIsStillRegisteredFails() {
        try (Registration ignored = registry.register("req-1", recorder)) {
            assertThatThrownBy(() -> registry.register("req-1", recorder))
                    .isInstanceOf(DuplicateRegistrationException.class)
                    .hasMessageContaining("req-1");
            assertThat(registry.liveRegistrations()).isEqualTo(1);
        }
    }

    @Test
    void anIdMayBeRegisteredAgainAfterNormalCompletion() {
        registry.register("req-1", recorder).complete();
        try (Registration again = registry.register("req-1", recorder)) {
            assertThat(again.isCancelled()).isFalse();
        }
        assertThat(aborts).isEmpty();
    }

    @Test
    void cancelMatchesIdsExactlyNeverByPrefix() {
        try (Registration longer = registry.register("req-12", recorder);
                Registration shorter = registry.register("req-1", recorder)) {
            registry.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
            registry.cancel("req-", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
            registry.cancel("REQ-12", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
            assertThat(longer.isCancelled()).isFalse();
            assertThat(shorter.isCancelled()).isTrue();
        }
    }

    @Test
    void anExpiredTombstoneDoesNotAbortALaterRegistration() {
        registry.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA);
        nanos.addAndGet(Duration.ofMinutes(10).toNanos());

        assertThat(registry.isCancelled("req-1")).isFalse();
        try (Registration registration = registry.register("req-1", recorder)) {
            assertThat(registration.isCancelled()).isFalse();
        }
        assertThat(aborts).isEmpty();
        assertThat(meters.counter("ripcord.cancel.tombstones.evicted", "cause", "expired").count()).isEqualTo(1);
    }

    /** A wall clock that moves with {@link #nanos}: publish times are compared with it. */
    private static final Instant EPOCH = Instant.parse("2026-12-01T12:00:00Z");

    private Instant wallNow() {
        return EPOCH.plusNanos(nanos.get());
    }

    private CancellationRegistry withWallClock() {
        return new CancellationRegistry(new CancellationRegistry.Options(Duration.ofMinutes(10), 1_000), meters,
                nanos::get, this::wallNow);
    }

    @Test
    void aTombstoneLivesItsTtlFromThePublishTimeNotFromConsumption() {
        CancellationRegistry replaying = withWallClock();
        nanos.addAndGet(Duration.ofMinutes(30).toNanos());
        // Published 9 min ago (a restarted worker replaying its window): 1 minute of life left, not 10.
        Instant published = wallNow().minus(Duration.ofMinutes(9));
        assertThat(replaying.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA, published))
                .isEqualTo(CancelOutcome.TOMBSTONED);

        nanos.addAndGet(Duration.ofMinutes(1).minusNanos(1).toNanos());
        assertThat(replaying.isCancelled("req-1")).as("one nanosecond before publish + TTL").isTrue();
        nanos.addAndGet(1);
        assertThat(replaying.isCancelled("req-1")).as("exactly publish + TTL").isFalse();
        try (Registration registration = replaying.register("req-1", recorder)) {
            assertThat(registration.isCancelled()).isFalse();
        }
        assertThat(aborts).isEmpty();
        replaying.assertNoLiveRegistrations();
    }

    @Test
    void aCancelPublishedJustInsideTheTtlAbortsARegistrationExactlyOnce() {
        CancellationRegistry replaying = withWallClock();
        nanos.addAndGet(Duration.ofMinutes(30).toNanos());
        Instant published = wallNow().minus(Duration.ofMinutes(10)).plusNanos(1);
        assertThat(replaying.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA, published))
                .isEqualTo(CancelOutcome.TOMBSTONED);
        // Replays of the same cancel, whatever their age, change nothing.
        assertThat(replaying.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA, published))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        assertThat(replaying.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA,
                published.minus(Duration.ofHours(1)))).isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        try (Registration registration = replaying.register("req-1", recorder)) {
            assertThat(registration.isCancelled()).isTrue();
        }
        assertThat(aborts).containsExactly(new Abort("req-1", CancelReason.DEADLINE, CancelSource.TOMBSTONE));
        replaying.assertNoLiveRegistrations();
    }

    @Test
    void aCancelPublishedExactlyTheTtlAgoKeepsNothing() {
        CancellationRegistry replaying = withWallClock();
        nanos.addAndGet(Duration.ofMinutes(30).toNanos());
        Instant published = wallNow().minus(Duration.ofMinutes(10));
        assertThat(replaying.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA, published))
                .isEqualTo(CancelOutcome.EXPIRED);
        assertThat(replaying.tombstones()).isZero();
        assertThat(replaying.isCancelled("req-1")).isFalse();
        try (Registration registration = replaying.register("req-1", recorder)) {
            assertThat(registration.isCancelled()).isFalse();
        }
        assertThat(aborts).isEmpty();
        replaying.assertNoLiveRegistrations();
    }

    @Test
    void aCancelOlderThanTheTtlIsAReplayAndAbortsNoLiveRequest() {
        // Regression: a live request was aborted by a cancel of any age, so a replayed topic (rebalance, failover,
        // `ripcord cancels replay`) killed live requests that reused an old ID.
        CancellationRegistry replaying = withWallClock();
        nanos.addAndGet(Duration.ofMinutes(30).toNanos());
        try (Registration registration = replaying.register("req-1", recorder)) {
            assertThat(replaying.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA,
                    wallNow().minus(Duration.ofMinutes(20)))).isEqualTo(CancelOutcome.EXPIRED);
            assertThat(replaying.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA,
                    wallNow().minus(Duration.ofMinutes(10)))).isEqualTo(CancelOutcome.EXPIRED);
            assertThat(registration.isCancelled()).isFalse();
            assertThat(replaying.tombstones()).isZero();
        }
        assertThat(aborts).isEmpty();
        replaying.assertNoLiveRegistrations();
    }

    @Test
    void aCancelYoungerThanTheTtlAbortsTheLiveRequestItNames() {
        CancellationRegistry replaying = withWallClock();
        nanos.addAndGet(Duration.ofMinutes(30).toNanos());
        try (Registration registration = replaying.register("req-1", recorder)) {
            assertThat(replaying.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA,
                    wallNow().minus(Duration.ofMinutes(10)).plusNanos(1))).isEqualTo(CancelOutcome.ABORTED);
            assertThat(registration.isCancelled()).isTrue();
        }
        assertThat(aborts).containsExactly(new Abort("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA));
        replaying.assertNoLiveRegistrations();
    }

    @Test
    void aPublishTimeAheadOfThisClockCountsAsNow() {
        CancellationRegistry replaying = withWallClock();
        assertThat(replaying.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA,
                wallNow().plus(Duration.ofHours(1)))).isEqualTo(CancelOutcome.TOMBSTONED);
        nanos.addAndGet(Duration.ofMinutes(10).minusNanos(1).toNanos());
        assertThat(replaying.isCancelled("req-1")).isTrue();
        nanos.addAndGet(1);
        assertThat(replaying.isCancelled("req-1")).isFalse();
    }

    @Test
    void expiredTombstonesAreSweptAndCounted() {
        registry.cancel("req-1", CancelReason.DEADLINE, CancelSource.KAFKA);
        registry.cancel("req-2", CancelReason.DEADLINE, CancelSource.KAFKA);
        nanos.addAndGet(Duration.ofMinutes(5).toNanos());
        registry.cancel("req-3", CancelReason.DEADLINE, CancelSource.KAFKA);
        nanos.addAndGet(Duration.ofMinutes(5).toNanos());

        assertThat(registry.tombstones()).isEqualTo(1);
        assertThat(registry.isCancelled("req-3")).isTrue();
        assertThat(meters.counter("ripcord.cancel.tombstones.evicted", "cause", "expired").count()).isEqualTo(2);
    }

    @Test
    void tombstonesBeyondMaxSizeAreEvictedOldestFirst() {
        CancellationRegistry small = new CancellationRegistry(
                new CancellationRegistry.Options(Duration.ofMinutes(10), 3), meters, nanos::get);
        for (int i = 1; i <= 5; i++) {
            small.cancel("req-" + i, CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
        }
        assertThat(small.tombstones()).isEqualTo(3);
        assertThat(small.isCancelled("req-1")).isFalse();
        assertThat(small.isCancelled("req-2")).isFalse();
        assertThat(small.isCancelled("req-3")).isTrue();
        assertThat(small.isCancelled("req-5")).isTrue();
        assertThat(meters.counter("ripcord.cancel.tombstones.evicted", "cause", "size").count()).isEqualTo(2);
    }

    @Test
    void aTombstoneClaimedByARegistrationLeavesTheTable() {
        registry.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
        registry.register("req-1", recorder).complete();
        // Aborted then completed: kept again as a tombstone, so the count is one, not two.
        assertThat(registry.tombstones()).isEqualTo(1);
    }

    @Test
    void anAbortHandlerThatThrowsStillCountsAsAbortedOnce() {
        Registration registration = registry.register("req-1", (id, reason, source) -> {
            aborts.add(new Abort(id, reason, source));
            throw new IllegalStateException("boom");
        });
        assertThat(registry.cancel("req-1", CancelReason.UPSTREAM_ERROR, CancelSource.IN_BAND))
                .isEqualTo(CancelOutcome.ABORTED);
        assertThat(registry.cancel("req-1", CancelReason.UPSTREAM_ERROR, CancelSource.KAFKA))
                .isEqualTo(CancelOutcome.ALREADY_CANCELLED);
        assertThat(aborts).hasSize(1);
        assertThat(meters.counter("ripcord.cancel.abort.failures").count()).isEqualTo(1);
        registration.complete();
    }

    @Test
    void metricsCountAbortsBySourceTombstonesAndCompletions() {
        Registration one = registry.register("req-1", recorder);
        registry.cancel("req-1", CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
        registry.cancel("req-2", CancelReason.CLIENT_CANCEL, CancelSource.KAFKA);
        Registration two = registry.register("req-2", recorder);
        Registration three = registry.register("req-3", recorder);

        assertThat(meters.get("ripcord.cancel.registrations.live").gauge().value()).isEqualTo(3);
        assertThat(meters.counter("ripcord.cancel.aborts", "source", "in_band").count()).isEqualTo(1);
        assertThat(meters.counter("ripcord.cancel.aborts", "source", "tombstone").count()).isEqualTo(1);
        assertThat(meters.counter("ripcord.cancel.tombstones.created").count()).isEqualTo(1);
        assertThat(meters.counter("ripcord.cancel.tombstones.hit").count()).isEqualTo(1);

        registry.cancelAll(CancelReason.SHUTDOWN, CancelSource.SHUTDOWN);
        assertThat(meters.counter("ripcord.cancel.aborts", "source", "shutdown").count()).isEqualTo(1);
        one.complete();
        two.complete();
        three.complete();
        registry.register("req-4", recorder).complete();

        assertThat(meters.counter("ripcord.cancel.registrations.completed", "outcome", "aborted").count())
                .isEqualTo(3);
        assertThat(meters.counter("ripcord.cancel.registrations.completed", "outcome", "normal").count())
                .isEqualTo(1);
        assertThat(meters.get("ripcord.cancel.registrations.live").gauge().value()).isZero();
        assertThat(meters.get("ripcord.cancel.tombstones.live").gauge().value()).isEqualTo(3);
        assertThat(aborts).extracting(Abort::requestId).containsExactly("req-1", "req-2", "req-3");
    }

    @Test
    void cancelAllAbortsEveryLiveRegistrationOnce() {
        Registration one = registry.register("req-1", recorder);
        Registration two = registry.register("req-2", recorder);
        registry.cancel("req-2", CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);

        assertThat(registry.cancelAll(CancelReason.SHUTDOWN, CancelSource.SHUTDOWN)).isEqualTo(1);
        assertThat(aborts).containsExactlyInAnyOrder(
                new Abort("req-2", CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND),
                new Abort("req-1", CancelReason.SHUTDOWN, CancelSource.SHUTDOWN));
        one.complete();
        two.complete();
    }

    @Test
    void assertNoLiveRegistrationsNamesTheLeakedIds() {
        Registration leaked = registry.register("req-leaked", recorder);
        assertThatThrownBy(registry::assertNoLiveRegistrations)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("1 registration(s) still live")
                .hasMessageContaining("req-leaked");
        leaked.complete();
        registry.assertNoLiveRegistrations();
    }

    @Test
    void leakExtensionFailsATestThatLeavesARegistrationLive() {
        CancellationRegistry other = new CancellationRegistry();
        CancellationLeakExtension extension = CancellationLeakExtension.afterEachTest(() -> other);
        ExtensionContext context = Mockito.mock(ExtensionContext.class);
        Mockito.when(context.getDisplayName()).thenReturn("someTest()");
        Registration leaked = other.register("req-leaked", recorder);

        assertThatThrownBy(() -> extension.afterEach(context))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("someTest() leaked registrations")
                .hasMessageContaining("req-leaked");
        leaked.complete();
        extension.afterEach(context);
    }

    @Test
    void invalidArgumentsAreRejected() {
        assertThatThrownBy(() -> registry.register("bad id", recorder)).isInstanceOf(InvalidRequestIdException.class);
        assertThatThrownBy(() -> registry.cancel("bad/id", CancelReason.DEADLINE, CancelSource.KAFKA))
                .isInstanceOf(InvalidRequestIdException.class);
        assertThatThrownBy(() -> registry.cancel("req-1", CancelReason.DEADLINE, CancelSource.TOMBSTONE))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a signal source");
        assertThat(registry.tombstones()).isZero();
    }

    @Test
    void illegalStateTransitionsAreRejected() {
        assertThat(RegistrationState.LIVE.to(RegistrationState.ABORTING)).isEqualTo(RegistrationState.ABORTING);
        assertThat(RegistrationState.LIVE.to(RegistrationState.COMPLETED)).isEqualTo(RegistrationState.COMPLETED);
        assertThat(RegistrationState.ABORTING.to(RegistrationState.ABORTED)).isEqualTo(RegistrationState.ABORTED);
        assertThatThrownBy(() -> RegistrationState.COMPLETED.to(RegistrationState.ABORTING))
                .hasMessage("illegal registration transition COMPLETED -> ABORTING");
        assertThatThrownBy(() -> RegistrationState.ABORTED.to(RegistrationState.COMPLETED))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> RegistrationState.ABORTING.to(RegistrationState.COMPLETED))
                .isInstanceOf(IllegalStateException.class);
    }
}
