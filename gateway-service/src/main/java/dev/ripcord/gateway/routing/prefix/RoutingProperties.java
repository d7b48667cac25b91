package dev.ripcord.gateway.routing.prefix;

import dev.ripcord.gateway.routing.RoutingPolicy;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Pattern;
import jakarta.validation.constraints.PositiveOrZero;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.gateway.routing.*}: how the gateway picks a prefill worker (docs/configuration.md,
 * docs/architecture.md).
 *
 * @param policy           {@code cache-aware} (default): the most cached prompt pages weighed against the legs in
 *                         flight; {@code least-loaded}: the fewest legs in flight; {@code round-robin}: each in turn
 * @param overlapWeight    under {@code cache-aware}, how many legs in flight one cached page of the prompt is worth
 *                         (Dynamo's overlap-score weight); 0 routes by load alone
 * @param cacheEventsTopic the prefix-cache topic the prefill workers publish on
 *                         ({@code ripcord.prefill.cache-events.topic})
 */
@Validated
@ConfigurationProperties("ripcord.gateway.routing")
public record RoutingProperties(
        @DefaultValue("cache-aware") @NotNull RoutingPolicy policy,
        @DefaultValue("1.0") @PositiveOrZero double overlapWeight,
        @DefaultValue("ripcord.prefix-cache") @NotNull @Pattern(regexp = "[a-zA-Z0-9._-]{1,249}")
        String cacheEventsTopic) {
}
