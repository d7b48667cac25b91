package dev.ripcord.prefill.prefix;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import dev.ripcord.protocol.prefix.PrefixCacheEvent.Kind;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class CacheEventPublisherTest {

    /** Records every event; {@link #failNext} makes the next send report a failure. */
    private static final class RecordingSink implements CacheEventPublisher.Sink {
        final BlockingQueue<PrefixCacheEvent> sent = new LinkedBlockingQueue<>();
        volatile boolean failNext;
        volatile CountDownLatch gate;
        final CountDownLatch entered = new CountDownLatch(1);

        @Override
        public void send(PrefixCacheEvent event, Consumer<Throwable> failed) {
            entered.countDown();
            CountDownLatch g = gate;
            if (g != null) {
                try {
                    g.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if (failNext) {
                failNext = false;
                failed.accept(new IllegalStateException("broker gone"));
                return;
            }
            sent.add(event);
        }

        PrefixCacheEvent next() throws InterruptedException {
            PrefixCacheEvent e = sent.poll(10, TimeUnit.SECONDS);
            assertThat(e).as("an event was published").isNotNull();
            return e;
        }
    }

    @Test
    void changesArePublishedInOrderAfterAnOpeningClearedWithGaplessSequenceNumbers() throws Exception {
        RecordingSink sink = new RecordingSink();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (CacheEventPublisher publisher = new CacheEventPublisher(16, 64, sink, meters)) {
            publisher.stored(new long[] {1, 2});
            publisher.removed(new long[] {2});
            publisher.start("10.0.0.7:8081");
            PrefixCacheEvent cleared = sink.next();
            PrefixCacheEvent stored = sink.next();
            PrefixCacheEvent removed = sink.next();
            assertThat(List.of(cleared.kind(), stored.kind(), removed.kind()))
                    .containsExactly(Kind.CLEARED, Kind.STORED, Kind.REMOVED);
            assertThat(List.of(cleared.seq(), stored.seq(), removed.seq())).containsExactly(1L, 2L, 3L);
            assertThat(stored.generation()).isEqualTo(cleared.generation());
            assertThat(stored.keys()).containsExactly(1, 2);
            assertThat(stored.workerId()).isEqualTo("10.0.0.7:8081");
            assertThat(stored.pageTokens()).isEqualTo(64);

            publisher.cleared(); // an operator's clear: a new generation
            PrefixCacheEvent again = sink.next();
            assertThat(again.kind()).isEqualTo(Kind.CLEARED);
            assertThat(again.seq()).isEqualTo(4);
            assertThat(again.generation()).isNotEqualTo(cleared.generation());
            assertThat(meters.counter("ripcord.prefix.cache.events.published").count()).isEqualTo(4);
        }
    }

    @Test
    void aFullQueueIsAGapThatStartsANewGenerationBeforeAnyLaterChange() throws Exception {
        RecordingSink sink = new RecordingSink();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (CacheEventPublisher publisher = new CacheEventPublisher(2, 64, sink, meters)) {
            // The opening CLEARED occupies one slot; one change fits, the next two are dropped.
            publisher.stored(new long[] {1});
            publisher.stored(new long[] {2});
            publisher.removed(new long[] {1});
            assertThat(publisher.dropped()).isEqualTo(2);
            publisher.start("w:1");
            PrefixCacheEvent first = sink.next();
            assertThat(first.kind()).isEqualTo(Kind.CLEARED);
            // What was queued around the loss is thrown away with it; the new generation starts clean.
            publisher.stored(new long[] {3});
            PrefixCacheEvent next = sink.next();
            assertThat(next.kind()).isEqualTo(Kind.STORED);
            assertThat(next.keys()).containsExactly(3);
            assertThat(next.generation()).isEqualTo(first.generation());
            assertThat(next.seq()).isEqualTo(first.seq() + 1);
            assertThat(publisher.dropped()).isEqualTo(4); // the two drops, the opening CLEARED and {1} thrown away
            assertThat(meters.counter("ripcord.prefix.cache.events.dropped").count()).isEqualTo(4);
        }
    }

    @Test
    void aFailedSendLeavesASequenceHoleAndIsFollowedByAFreshCleared() throws Exception {
        RecordingSink sink = new RecordingSink();
        try (CacheEventPublisher publisher = new CacheEventPublisher(16, 64, sink, new SimpleMeterRegistry())) {
            publisher.start("w:1");
            PrefixCacheEvent cleared = sink.next();
            sink.failNext = true;
            publisher.stored(new long[] {1}); // seq 2, lost in the send
            PrefixCacheEvent after = sink.next();
            assertThat(after.kind()).isEqualTo(Kind.CLEARED);
            assertThat(after.seq()).as("seq 2 is the hole gateways see").isEqualTo(3);
            assertThat(after.generation()).isNotEqualTo(cleared.generation());
            assertThat(publisher.dropped()).isEqualTo(1);
        }
    }

    @Test
    void listenerCallsNeverBlockWhileThePublisherThreadIsStuckInTheSink() throws Exception {
        RecordingSink sink = new RecordingSink();
        sink.gate = new CountDownLatch(1);
        try (CacheEventPublisher publisher = new CacheEventPublisher(4, 64, sink, new SimpleMeterRegistry())) {
            publisher.start("w:1");
            assertThat(sink.entered.await(10, TimeUnit.SECONDS)).isTrue(); // held in the sink with the CLEARED
            for (int i = 0; i < 1000; i++) {
                publisher.stored(new long[] {i});
            }
            assertThat(publisher.dropped()).isGreaterThanOrEqualTo(1000 - 4);
            sink.gate.countDown();
            PrefixCacheEvent first = sink.next();
            PrefixCacheEvent second = sink.next();
            assertThat(List.of(first.kind(), second.kind())).containsExactly(Kind.CLEARED, Kind.CLEARED);
            assertThat(second.generation()).isNotEqualTo(first.generation());
            assertThat(sink.sent.poll(200, TimeUnit.MILLISECONDS)).as("nothing queued before the loss survives")
                    .isNull();
        }
    }
}
