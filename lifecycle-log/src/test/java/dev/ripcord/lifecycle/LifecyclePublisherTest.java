package dev.ripcord.lifecycle;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class LifecyclePublisherTest {

    @Test
    void eventsAreStampedWithServiceInstanceAndGapFreeSequenceNumbersInCallOrder() {
        List<LifecycleEvent> sent = new CopyOnWriteArrayList<>();
        try (LifecyclePublisher publisher = new LifecyclePublisher("prefill", "p1", 16, sent::add,
                Clock.systemUTC())) {
            for (int i = 0; i < 10; i++) {
                publisher.emit(LifecycleEvent.of(LifecycleEventType.CHUNK_DONE, "req-" + i).withChunk(i));
            }
        }
        // Ten events, then the clean stop's marker: the incarnation's last sequence number.
        assertThat(sent).hasSize(11);
        assertThat(sent).extracting(LifecycleEvent::seq)
                .containsExactly(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L, 10L, 11L);
        assertThat(sent.getLast().type()).isEqualTo(LifecycleEventType.STOPPED);
        assertThat(sent.getLast().requestId()).isNull();
        assertThat(sent).allSatisfy(e -> {
            assertThat(e.service()).isEqualTo("prefill");
            assertThat(e.instance()).isEqualTo("p1");
            assertThat(e.incarnation()).isEqualTo(sent.getFirst().incarnation()).isNotBlank();
            assertThat(e.isStamped()).isTrue();
        });
    }

    @Test
    void aFullQueueDropsWithoutBlockingCountsTheDropsAndReportsThemWithAMarkerOnceThereIsRoom()
            throws InterruptedException {
        CountDownLatch sinkHeld = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        List<LifecycleEvent> sent = new CopyOnWriteArrayList<>();
        LifecycleSink blocking = event -> {
            sinkHeld.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            sent.add(event);
        };
        LifecyclePublisher publisher = new LifecyclePublisher("decode", "d1", 2, blocking, Clock.systemUTC());
        publisher.emit(LifecycleEvent.of(LifecycleEventType.KV_LANDED, "req-0")); // seq 1: taken by the thread
        assertThat(sinkHeld.await(10, TimeUnit.SECONDS)).isTrue();
        for (int i = 1; i <= 6; i++) { // seq 2, 3 fit; 4..7 are dropped
            publisher.emit(LifecycleEvent.of(LifecycleEventType.KV_LANDED, "req-" + i));
        }
        assertThat(publisher.dropped()).isEqualTo(4);
        release.countDown();
        publisher.close(Duration.ofSeconds(10));

        assertThat(sent).extracting(LifecycleEvent::seq).startsWith(1L, 2L, 3L);
        assertThat(sent.getLast().type()).isEqualTo(LifecycleEventType.STOPPED);
        assertThat(sent.getLast().seq()).isEqualTo(9);
        LifecycleEvent marker = sent.get(sent.size() - 2);
        assertThat(marker.type()).isEqualTo(LifecycleEventType.DROPPED);
        assertThat(marker.requestId()).isNull();
        assertThat(marker.dropped()).isEqualTo(4);
        assertThat(marker.droppedFromSeq()).isEqualTo(4);
        assertThat(marker.droppedToSeq()).isEqualTo(7);
        assertThat(marker.seq()).isEqualTo(8);
        assertThat(marker.key()).isEqualTo("instance:d1");
    }

    @Test
    void aSinkThatNeverDeliversIsClosedWithWhatIsLeftOfTheGraceNotASecondGrace() {
        CountDownLatch never = new CountDownLatch(1);
        List<Duration> closedWith = new CopyOnWriteArrayList<>();
        LifecycleSink stuck = new LifecycleSink() {
            @Override
            public void send(LifecycleEvent event) {
                try {
                    never.await(); // a broker that is away: the send blocks until the thread is interrupted
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }

            @Override
            public void close(Duration timeout) {
                closedWith.add(timeout);
            }
        };
        LifecyclePublisher publisher = new LifecyclePublisher("prefill", "p1", 4, stuck, Clock.systemUTC());
        publisher.emit(LifecycleEvent.of(LifecycleEventType.KV_LANDED, "req-1"));
        Duration grace = Duration.ofMillis(200);

        publisher.close(grace);

        // The delivery used the whole grace: the sink gets the floor, a tenth of it, once.
        assertThat(closedWith).containsExactly(Duration.ofMillis(20));
    }

    @Test
    void theSinksCloseGetsWhatTheDeliveryLeftOfTheGraceWithinATenthAndTheWhole() {
        Duration grace = Duration.ofSeconds(5);
        assertThat(LifecyclePublisher.sinkCloseTimeout(grace, Duration.ofSeconds(4).toNanos()))
                .isEqualTo(Duration.ofSeconds(4));
        assertThat(LifecyclePublisher.sinkCloseTimeout(grace, 0)).isEqualTo(Duration.ofMillis(500));
        assertThat(LifecyclePublisher.sinkCloseTimeout(grace, -Duration.ofSeconds(1).toNanos()))
                .isEqualTo(Duration.ofMillis(500));
        assertThat(LifecyclePublisher.sinkCloseTimeout(grace, Duration.ofSeconds(9).toNanos())).isEqualTo(grace);
    }

    @Test
    void twoPublishersOfOneInstanceAreTwoIncarnations() {
        List<LifecycleEvent> sent = new CopyOnWriteArrayList<>();
        try (LifecyclePublisher first = new LifecyclePublisher("decode", "d1", 4, sent::add, Clock.systemUTC());
             LifecyclePublisher second = new LifecyclePublisher("decode", "d1", 4, sent::add, Clock.systemUTC())) {
            assertThat(first.incarnation()).isNotEqualTo(second.incarnation());
        }
    }

    @Test
    void theDisabledPublisherRecordsNothing() {
        LifecyclePublisher off = LifecyclePublisher.disabled();
        off.emit(LifecycleEvent.of(LifecycleEventType.ADMITTED, "req-1"));
        assertThat(off.isEnabled()).isFalse();
        assertThat(off.emitted()).isZero();
    }

    /** A clock the test moves. */
    private static final class TestClock extends Clock {
        private volatile java.time.Instant now = java.time.Instant.parse("2026-12-01T12:00:00Z");

        @Override
        public java.time.ZoneId getZone() {
            return java.time.ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public java.time.Instant instant() {
            return now;
        }
    }

    @Test
    void aHeartbeatFollowsEventsOnceTheIntervalPassedSoThatALostTailIsAGapAndAnIdleProcessSendsNone()
            throws InterruptedException {
        TestClock clock = new TestClock();
        List<LifecycleEvent> sent = new CopyOnWriteArrayList<>();
        CountDownLatch beat = new CountDownLatch(1);
        LifecycleSink sink = event -> {
            sent.add(event);
            if (event.type() == LifecycleEventType.HEARTBEAT) {
                beat.countDown();
            }
        };
        LifecyclePublisher publisher = new LifecyclePublisher("decode", "d1", 16, sink, clock, Duration.ofSeconds(1));
        publisher.emit(LifecycleEvent.of(LifecycleEventType.KV_LANDED, "req-1"));
        clock.now = clock.now.plusSeconds(2);
        assertThat(beat.await(10, TimeUnit.SECONDS)).isTrue();
        clock.now = clock.now.plusSeconds(2); // nothing emitted since: no second heartbeat
        publisher.close(Duration.ofSeconds(10));

        assertThat(sent).extracting(LifecycleEvent::type).containsExactly(LifecycleEventType.KV_LANDED,
                LifecycleEventType.HEARTBEAT, LifecycleEventType.STOPPED);
        assertThat(sent).extracting(LifecycleEvent::seq).containsExactly(1L, 2L, 3L);
        assertThat(sent.get(1).requestId()).isNull();
        assertThat(sent.get(1).key()).isEqualTo("instance:d1");
    }

    @Test
    void dropsEmitsAfterCloseAndSinkFailuresAreCountedAsMetrics() {
        LifecycleSink refusing = new LifecycleSink() {
            @Override
            public void send(LifecycleEvent event) {
                if (event.type() == LifecycleEventType.KV_LANDED) {
                    throw new IllegalStateException("broker away");
                }
            }

            @Override
            public long failed() {
                return 2; // failed in the producer's callbacks
            }
        };
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        LifecyclePublisher publisher = new LifecyclePublisher("prefill", "p1", 4, refusing, Clock.systemUTC());
        publisher.bindTo(meters);
        publisher.emit(LifecycleEvent.of(LifecycleEventType.KV_LANDED, "req-1"));
        publisher.close(Duration.ofSeconds(10));
        publisher.emit(LifecycleEvent.of(LifecycleEventType.KV_LANDED, "req-2"));
        publisher.emit(LifecycleEvent.of(LifecycleEventType.KV_LANDED, "req-3"));

        assertThat(publisher.droppedAfterClose()).isEqualTo(2);
        assertThat(publisher.sendFailures()).isEqualTo(3);
        assertThat(meters.get("ripcord.lifecycle.events.dropped").tag("reason", "after-close").functionCounter()
                .count()).isEqualTo(2.0);
        assertThat(meters.get("ripcord.lifecycle.events.dropped").tag("reason", "queue-full").functionCounter()
                .count()).isZero();
        assertThat(meters.get("ripcord.lifecycle.send.failures").tag("service", "prefill").functionCounter()
                .count()).isEqualTo(3.0);
        assertThat(meters.get("ripcord.lifecycle.events.emitted").functionCounter().count()).isEqualTo(1.0);
    }
}
