package dev.ripcord.decode;

import java.time.Duration;

import jakarta.validation.Valid;
import jakarta.validation.constraints.Min;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.decode.*}: continuous batching.
 *
 * @param maxBatch   sequences advanced together by one decode step (capped by {@code ripcord.engine.max-batch});
 *                   sequences join and leave between steps
 * @param retryAfter what {@code Retry-After} says when a request is refused (its admission queue full, or it waited
 *                   {@code admission.max-wait} for KV pages) before the first decode step; afterwards the scheduler
 *                   estimates it from the tokens in hand and the measured step time
 * @param admission  the queue of requests waiting for KV pages
 */
@Validated
@ConfigurationProperties("ripcord.decode")
public record DecodeProperties(
        @DefaultValue("32") @Min(1) int maxBatch,
        @DefaultValue("1s") Duration retryAfter,
        @DefaultValue @Valid Admission admission) {

    /**
     * {@code ripcord.decode.admission.*}: a request whose KV pages cannot be committed at once waits for pages to
     * come back, oldest first; a smaller one that fits may pass it until it has aged.
     *
     * @param maxQueued requests waiting at most; one more is refused (503 with {@code Retry-After})
     * @param maxWait   how long a request may wait; then it is refused (503). Shorter than the gateway's
     *                  {@code admission-timeout} (30 s), which gives up on a worker that has not answered by then
     */
    public record Admission(
            @DefaultValue("256") @Min(1) int maxQueued,
            @DefaultValue("20s") Duration maxWait) {
    }
}
