package dev.ripcord.prefill;

import java.time.Duration;

import jakarta.validation.constraints.Min;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.prefill.*}: the chunked-prefill scheduler.
 *
 * @param chunkTokens   prompt tokens computed per chunk: the unit of interruption (a cancel takes effect after at
 *                      most one chunk) and of KV streaming (each finished chunk's pages are pushed at once)
 * @param maxRunning    prompts in prefill at once, interleaved chunk by chunk; default 1: one long prompt occupies
 *                      the worker, exactly the situation in which a cancelled prompt hurts everyone behind it
 * @param queueCapacity admitted prompts waiting for a running slot; beyond it, 503 with {@code Retry-After}
 * @param retryAfter    what {@code Retry-After} says when the queue is full
 */
@Validated
@ConfigurationProperties("ripcord.prefill")
public record PrefillProperties(
        @DefaultValue("512") @Min(1) int chunkTokens,
        @DefaultValue("1") @Min(1) int maxRunning,
        @DefaultValue("64") @Min(1) int queueCapacity,
        @DefaultValue("1s") Duration retryAfter) {
}
