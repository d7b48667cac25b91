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
 * @param prefillWorkers    the prefill workers (default: the local stack's): base URLs ({@code http://host:port}),
 *                          DNS names whose every address is a worker ({@code dns+http://headless-service:port}), or
 *                          files listing either ({@code file:/path}); see
 *                          {@link dev.ripcord.gateway.routing.WorkerDiscovery}
 * @param decodeWorkers     the decode workers, as for {@code prefillWorkers}
 * @param connectTimeout    TCP connect timeout of internal calls
 * @param discoveryInterval how often DNS names and files among the worker entries are resolved again
 */
@Validated
@ConfigurationProperties("ripcord.gateway")
public record GatewayProperties(
        @DefaultValue("http://localhost:8081") @NotEmpty List<URI> prefillWorkers,
        @DefaultValue("http://localhost:8082") @NotEmpty List<URI> decodeWorkers,
        @DefaultValue("10s") Duration connectTimeout,
        @DefaultValue("5s") Duration discoveryInterval) {
}
