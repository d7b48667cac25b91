package dev.ripcord.gateway;

import java.net.URI;
import java.time.Duration;
import java.util.List;

import jakarta.validation.constraints.NotEmpty;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.gateway.*}: where the workers are and how the gateway talks to them.
 *
 * @param prefillWorkers base URLs of the prefill workers (default: the local stack's)
 * @param decodeWorkers  base URLs of the decode workers (default: the local stack's)
 * @param connectTimeout TCP connect timeout of internal calls
 */
@Validated
@ConfigurationProperties("ripcord.gateway")
public record GatewayProperties(
        @DefaultValue("http://localhost:8081") @NotEmpty List<URI> prefillWorkers,
        @DefaultValue("http://localhost:8082") @NotEmpty List<URI> decodeWorkers,
        @DefaultValue("10s") Duration connectTimeout) {
}
