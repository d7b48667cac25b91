package dev.ripcord.cancel.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.cancel.CancelPublishException;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.cancel.Origin;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;

class KafkaCancelPublisherTest {

    private static final Origin ORIGIN = new Origin("gateway", "abc123");
    private static final Clock CLOCK = Clock.fixed(Instant.parse("2026-11-29T21:00:00Z"), ZoneOffset.UTC);

    private final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final List<Message<byte[]>> sent = new CopyOnWriteArrayList<>();
    private final List<String> sendThreads = new CopyOnWriteArrayList<>();
    private KafkaSendQueue queue;

    private KafkaCancelPublisher publisher(RecordSender sender, int capacity) {
        queue = new KafkaSendQueue((binding, message) -> {
            sendThreads.add(Thread.currentThread().getName());
            sent.add(message);
            return sender.send(binding, message);
        }, capacity, 3, Duration.ofMillis(1), Duration.ofSeconds(5), meters);
        return new KafkaCancelPublisher(queue, ORIGIN, CLOCK, meters);
    }

    @AfterEach
    void close() {
        if (queue != null) {
            queue.close();
        }
    }

    @Test
    void publishReturnsAtOnceAndSendsOnThePublisherThreadNotTheCaller() throws Exception {
        CountDownLatch sending = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        KafkaCancelPublisher publisher = publisher((binding, message) -> {
            sending.countDown();
            await(release); // a producer stuck on metadata (max.block.ms)
            return CompletableFuture.completedFuture(null);
        }, 10);

        CompletableFuture<Void> result = publisher.publish("req-1", CancelReason.CLIENT_DISCONNECT);

        assertThat(result).isNotDone();
        assertThat(sending.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(sendThreads).containsExactly(KafkaSendQueue.THREAD_NAME);
        release.countDown();
        result.get(30, TimeUnit.SECONDS);
    }

    @Test
    void recordKeyIsTheRequestIdAndValueTheJsonEvent() throws Exception {
        KafkaCancelPublisher publisher = publisher((binding, message) -> CompletableFuture.completedFuture(null), 10);

        publisher.publish("req-1", CancelReason.DEADLINE).get(30, TimeUnit.SECONDS);

        Message<byte[]> message = sent.getFirst();
        assertThat((byte[]) message.getHeaders().get(KafkaHeaders.KEY))
                .isEqualTo("req-1".getBytes(StandardCharsets.UTF_8));
        assertThat(CancelEventCodec.decode(message.getPayload()))
                .isEqualTo(CancelEvent.of("req-1", CancelReason.DEADLINE, ORIGIN, CLOCK.instant()));
        assertThat(meters.counter("ripcord.cancel.published", "outcome", "acked").count()).isEqualTo(1);
        assertThat(meters.timer("ripcord.cancel.publish.latency").count()).isEqualTo(1);
    }

    @Test
    void theFutureCompletesOnThePublisherThreadNotTheKafkaIoThread() throws Exception {
        CompletableFuture<Object> ack = new CompletableFuture<>();
        KafkaCancelPublisher publisher = publisher((binding, message) -> ack, 10);
        AtomicReference<String> completedOn = new AtomicReference<>();

        CompletableFuture<Void> result = publisher.publish("req-1", CancelReason.DEADLINE)
                .whenComplete((v, e) -> completedOn.set(Thread.currentThread().getName()));
        Awaitility.await().until(() -> !sent.isEmpty());
        Thread ioThread = new Thread(() -> ack.complete("acked"), "kafka-producer-network-thread");
        ioThread.start();
        ioThread.join();

        result.get(30, TimeUnit.SECONDS);
        assertThat(completedOn.get()).isEqualTo(KafkaSendQueue.THREAD_NAME);
    }

    @Test
    void aFailedSendIsRetriedInTheBackgroundThenAcked() throws Exception {
        AtomicInteger attempts = new AtomicInteger();
        KafkaCancelPublisher publisher = publisher((binding, message) -> attempts.incrementAndGet() < 3
                ? CompletableFuture.failedFuture(new IllegalStateException("broker away"))
                : CompletableFuture.completedFuture(null), 10);

        publisher.publish("req-1", CancelReason.CLIENT_CANCEL).get(30, TimeUnit.SECONDS);

        assertThat(attempts).hasValue(3);
        assertThat(meters.counter("ripcord.cancel.publish.retries", "binding", CancelBindings.OUTPUT).count())
                .isEqualTo(2);
        assertThat(meters.counter("ripcord.cancel.published", "outcome", "acked").count()).isEqualTo(1);
        assertThat(queue.pending()).isZero();
    }

    @Test
    void aSendThatKeepsFailingGivesUpAfterMaxAttemptsAndIsCounted() {
        KafkaCancelPublisher publisher = publisher((binding, message) -> {
            throw new IllegalStateException("metadata not available after 5000 ms");
        }, 10);

        CompletableFuture<Void> result = publisher.publish("req-1", CancelReason.CLIENT_CANCEL);

        assertThatThrownBy(() -> result.get(30, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause().isInstanceOf(CancelPublishException.class)
                .hasMessageContaining("gave up after 3 attempt(s)")
                .hasRootCauseMessage("metadata not available after 5000 ms");
        assertThat(sent).hasSize(3);
        assertThat(meters.counter("ripcord.cancel.published", "outcome", "gave_up").count()).isEqualTo(1);
        assertThat(meters.counter("ripcord.cancel.publish.retries", "binding", CancelBindings.OUTPUT).count())
                .isEqualTo(2);
    }

    @Test
    void publishFailsAtOnceWhenTheQueueIsFullInsteadOfBlocking() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        KafkaCancelPublisher publisher = publisher((binding, message) -> {
            await(release);
            return CompletableFuture.completedFuture(null);
        }, 2);
        CompletableFuture<Void> first = publisher.publish("req-1", CancelReason.CLIENT_CANCEL);
        CompletableFuture<Void> second = publisher.publish("req-2", CancelReason.CLIENT_CANCEL);

        CompletableFuture<Void> third = publisher.publish("req-3", CancelReason.CLIENT_CANCEL);

        assertThat(third).isCompletedExceptionally();
        assertThatThrownBy(third::join).cause().isInstanceOf(CancelPublishException.class)
                .hasMessageContaining("queue is full");
        assertThat(meters.counter("ripcord.cancel.published", "outcome", "rejected").count()).isEqualTo(1);
        release.countDown();
        CompletableFuture.allOf(first, second).get(30, TimeUnit.SECONDS);
    }

    @Test
    void closeWaitsForQueuedSendsThenRejectsNewOnes() throws Exception {
        KafkaCancelPublisher publisher = publisher((binding, message) -> CompletableFuture.completedFuture(null), 10);
        CompletableFuture<Void> queued = publisher.publish("req-1", CancelReason.SHUTDOWN);

        queue.close();

        assertThat(queued).isCompleted();
        assertThat(queued.isCompletedExceptionally()).isFalse();
        assertThatThrownBy(() -> publisher.publish("req-2", CancelReason.SHUTDOWN).join())
                .cause().isInstanceOf(CancelPublishException.class).hasMessageContaining("closed");
    }

    @Test
    void closeFailsSendsWhoseAckNeverCame() {
        queue = new KafkaSendQueue((binding, message) -> new CompletableFuture<>(), 10, 3, Duration.ofMillis(1),
                Duration.ofMillis(50), meters);
        KafkaCancelPublisher publisher = new KafkaCancelPublisher(queue, ORIGIN, CLOCK, meters);
        CompletableFuture<Void> unacked = publisher.publish("req-1", CancelReason.SHUTDOWN);

        queue.close();

        assertThatThrownBy(unacked::join).cause().isInstanceOf(CancelPublishException.class)
                .hasMessageContaining("closed before the broker acknowledged");
        assertThat(queue.pending()).isZero();
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
