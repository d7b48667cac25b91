package dev.ripcord.decode;

import java.time.Duration;

import jakarta.validation.constraints.Min;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.decode.*}: continuous batching.
 *
 * @param maxBatch   sequences advanced together by one decode step (capped by {@code ripcord.engine.max-batch});
 *                   sequences join and leave between steps
 * @param retryAfter what {@code Retry-After} says when a reservation is refused for lack of KV pages
 */
@Validated
@ConfigurationProperties("ripcord.decode")
public record DecodeProperties(
        @DefaultValue("16") @Min(1) int maxBatch,
        @DefaultValue("1s") Duration retryAfter) {
}
