package dev.ripcord.prefill;

import java.time.Duration;

import jakarta.validation.constraints.Min;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.ConstructorBinding;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.prefill.*}: the chunked-prefill scheduler.
 *
 * @param chunkTokens   prompt tokens computed per chunk: the unit of interruption (a cancel takes effect after at
 *                      most one chunk) and of KV streaming (each finished chunk's pages are pushed at once)
 * @param maxRunning    prompts in prefill at once, interleaved chunk by chunk, shortest remaining first with aging
 *                      (each holds the KV pages of its whole prompt, so the pool bounds it too)
 * @param queueCapacity admitted prompts waiting for a running slot; beyond it, 503 with {@code Retry-After}
 * @param retryAfter    what {@code Retry-After} says before the worker has measured its speed; afterwards it is the
 *                      time the queue's remaining work takes
 * @param maxWait       the longest a prompt waits to start: one that would wait longer is refused with 503, and one
 *                      still queued after it ends with {@code FAILED busy}; both say when to retry
 */
@Validated
@ConfigurationProperties("ripcord.prefill")
public record PrefillProperties(
        @DefaultValue("512") @Min(1) int chunkTokens,
        @DefaultValue("8") @Min(1) int maxRunning,
        @DefaultValue("64") @Min(1) int queueCapacity,
        @DefaultValue("1s") Duration retryAfter,
        @DefaultValue("30s") Duration maxWait) {

    /** The constructor configuration binds (the record has a second one). */
    @ConstructorBinding
    public PrefillProperties {
    }

    /** The defaults' maximum wait with the other settings given: for tests and callers that predate it. */
    public PrefillProperties(int chunkTokens, int maxRunning, int queueCapacity, Duration retryAfter) {
        this(chunkTokens, maxRunning, queueCapacity, retryAfter, Duration.ofSeconds(30));
    }
}
