package dev.ripcord.cancel.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.cancel.CancelPublishException;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;

/**
 * The one thread that talks to the Kafka producer for this module, so that no caller thread ever does.
 *
 * <h2>Why a thread of its own</h2>
 * Publishers are Netty event loops. Even an "async" {@code KafkaProducer.send} blocks its caller while it waits for
 * topic metadata (up to {@code max.block.ms}, e.g. when the broker is down or on the first send), and
 * {@code StreamBridge} creates the producer binding, with an AdminClient round trip, on its first send. So callers
 * only enqueue (a bounded, non-blocking step) and this single daemon thread, {@value #THREAD_NAME}, performs every
 * send. {@code max.block.ms} is capped (5 s, see {@link CancelBindingDefaults}) so a dead broker stalls this thread,
 * never a caller; while it is stalled the queue fills and further publishes fail fast.
 *
 * <h2>Bounds</h2>
 * At most {@code capacity} records are pending (queued, awaiting an ack, or waiting for a retry); beyond that
 * {@link #submit} fails at once with {@link SendOutcome#REJECTED}. A failed send is retried up to
 * {@code maxAttempts} attempts in all, with exponential backoff from {@code backoff} (capped at 5 s), counted in
 * {@code ripcord.cancel.publish.retries}; then it gives up ({@link SendOutcome#GAVE_UP}).
 *
 * <h2>Completion</h2>
 * The returned future completes on this thread (not on the Kafka client's I/O thread, which must never run user
 * code). On {@link #close()} queued records are still sent for up to {@code closeTimeout}; whatever is left then
 * fails with {@link CancelPublishException}.
 */
final class KafkaSendQueue implements AutoCloseable {

    static final String THREAD_NAME = "ripcord-cancel-publisher";

    private static final Logger log = LoggerFactory.getLogger(KafkaSendQueue.class);
    private static final long MAX_BACKOFF_NANOS = Duration.ofSeconds(5).toNanos();

    /** How one submitted record ended. */
    enum SendOutcome {
        ACKED, GAVE_UP, REJECTED
    }

    /** Told the outcome of one record exactly once, just before its future completes. */
    @FunctionalInterface
    interface OutcomeListener {
        void onOutcome(SendOutcome outcome, int attempts, Throwable lastError);
    }

    private static final class Attempt {
        final String binding;
        final Message<byte[]> message;
        final OutcomeListener listener;
        final CompletableFuture<Void> result = new CompletableFuture<>();
        volatile int attempts;

        Attempt(String binding, Message<byte[]> message, OutcomeListener listener) {
            this.binding = binding;
            this.message = message;
            this.listener = listener;
        }
    }

    private final RecordSender sender;
    private final int capacity;
    private final int maxAttempts;
    private final long backoffNanos;
    private final Duration closeTimeout;
    private final MeterRegistry meters;
    private final ScheduledThreadPoolExecutor thread;
    private final AtomicInteger pending = new AtomicInteger();
    private final Set<Attempt> inFlight = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    KafkaSendQueue(RecordSender sender, int capacity, int maxAttempts, Duration backoff, Duration closeTimeout,
            MeterRegistry meters) {
        this.sender = Objects.requireNonNull(sender, "sender");
        this.capacity = capacity;
        this.maxAttempts = maxAttempts;
        this.backoffNanos = backoff.toNanos();
        this.closeTimeout = closeTimeout;
        this.meters = meters;
        this.thread = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread t = new Thread(runnable, THREAD_NAME);
            t.setDaemon(true);
            return t;
        });
        this.thread.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
        this.thread.setRemoveOnCancelPolicy(true);
    }

    /** Enqueues one record; never blocks. The future completes when the broker acked it, or fails. */
    CompletableFuture<Void> submit(String binding, Message<byte[]> message, OutcomeListener listener) {
        Attempt attempt = new Attempt(binding, message, listener);
        if (closed) {
            return reject(attempt, "publisher is closed");
        }
        if (pending.incrementAndGet() > capacity) {
            pending.decrementAndGet();
            return reject(attempt, "publish queue is full (" + capacity + " pending)");
        }
        inFlight.add(attempt);
        try {
            thread.execute(() -> send(attempt));
        } catch (RejectedExecutionException e) {
            inFlight.remove(attempt);
            pending.decrementAndGet();
            return reject(attempt, "publisher is closed");
        }
        return attempt.result;
    }

    /** Records accepted and not yet finished. */
    int pending() {
        return pending.get();
    }

    private CompletableFuture<Void> reject(Attempt attempt, String why) {
        attempt.listener.onOutcome(SendOutcome.REJECTED, 0, null);
        attempt.result.completeExceptionally(new CancelPublishException(why, null));
        return attempt.result;
    }

    /** On {@link #THREAD_NAME}. */
    private void send(Attempt attempt) {
        attempt.attempts++;
        CompletableFuture<?> ack;
        try {
            ack = sender.send(attempt.binding, attempt.message);
        } catch (RuntimeException e) {
            ack = CompletableFuture.failedFuture(e);
        }
        // Usually runs later on the Kafka client's I/O thread: only decide and hand back here.
        ack.whenComplete((ignored, error) -> {
            if (error == null) {
                finish(attempt, SendOutcome.ACKED, null);
            } else {
                retryOrGiveUp(attempt, unwrap(error));
            }
        });
    }

    private void retryOrGiveUp(Attempt attempt, Throwable error) {
        int attempts = attempt.attempts;
        if (attempts >= maxAttempts || closed) {
            finish(attempt, SendOutcome.GAVE_UP, error);
            return;
        }
        long delay = Math.min(MAX_BACKOFF_NANOS, backoffNanos << Math.min(attempts - 1, 20));
        if (log.isDebugEnabled()) {
            // The key is the request ID for cancels, the poison record's coordinates for dead letters.
            Object key = attempt.message.getHeaders().get(KafkaHeaders.KEY);
            log.debug("send to {} failed, key={} (attempt {}/{}), retrying: {}", attempt.binding,
                    key instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : key, attempts,
                    maxAttempts, error.toString());
        }
        try {
            thread.schedule(() -> send(attempt), delay, TimeUnit.NANOSECONDS);
            meters.counter("ripcord.cancel.publish.retries", "binding", attempt.binding).increment();
        } catch (RejectedExecutionException e) {
            finish(attempt, SendOutcome.GAVE_UP, error);
        }
    }

    private void finish(Attempt attempt, SendOutcome outcome, Throwable error) {
        if (!inFlight.remove(attempt)) {
            return; // close() already failed it
        }
        pending.decrementAndGet();
        Runnable complete = () -> {
            try {
                attempt.listener.onOutcome(outcome, attempt.attempts, error);
            } finally {
                if (outcome == SendOutcome.ACKED) {
                    attempt.result.complete(null);
                } else {
                    attempt.result.completeExceptionally(new CancelPublishException(
                            "gave up after " + attempt.attempts + " attempt(s): " + error, error));
                }
            }
        };
        try {
            thread.execute(complete);
        } catch (RejectedExecutionException e) {
            complete.run();
        }
    }

    private static Throwable unwrap(Throwable error) {
        Throwable t = error;
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    @Override
    public void close() {
        closed = true;
        long deadline = System.nanoTime() + closeTimeout.toNanos();
        thread.shutdown();
        try {
            // Queued sends still go out; then wait for the acks of what was sent.
            if (thread.awaitTermination(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)) {
                CompletableFuture.allOf(inFlight.stream().map(a -> a.result).toArray(CompletableFuture[]::new))
                        .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // failures are reported per record; leftovers are failed below
        }
        thread.shutdownNow();
        for (Attempt attempt : inFlight) {
            if (inFlight.remove(attempt)) {
                pending.decrementAndGet();
                attempt.listener.onOutcome(SendOutcome.GAVE_UP, attempt.attempts, null);
                attempt.result.completeExceptionally(
                        new CancelPublishException("publisher closed before the broker acknowledged", null));
            }
        }
    }
}
