package dev.ripcord.gateway.serving;

import java.time.Clock;

import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.gateway.GatewayProperties;
import dev.ripcord.gateway.auth.InternalTls;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.model.ModelProperties;
import dev.ripcord.gateway.openai.OpenAiProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import io.micrometer.core.instrument.MeterRegistry;
import dev.ripcord.gateway.generation.TokenGenerator;
import dev.ripcord.gateway.routing.WorkerDiscovery;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.gateway.routing.prefix.PrefixRouting;
import dev.ripcord.gateway.routing.prefix.RoutingProperties;
import io.netty.channel.ChannelOption;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.web.reactive.function.client.WebClient;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.client.HttpClient;
import reactor.netty.resources.ConnectionProvider;

/** Wires the serving core: worker pools, the internal HTTP client and the {@link TokenGenerator}. */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties({GatewayProperties.class, RoutingProperties.class})
public class ServingConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ServingConfiguration.class);

    /** Prefill legs go by {@code ripcord.gateway.routing.policy} (cache-aware by default); decode's by load. */
    @Bean
    WorkerPool prefillPool(WorkerResilience resilience, RoutingProperties routing) {
        return new WorkerPool("prefill", resilience, routing.policy());
    }

    @Bean
    WorkerPool decodePool(WorkerResilience resilience) {
        return new WorkerPool("decode", resilience);
    }

    /** Fills the prefill pool from {@code ripcord.gateway.prefill-workers} and keeps it up to date. */
    @Bean(destroyMethod = "close")
    WorkerDiscovery prefillDiscovery(WorkerPool prefillPool, GatewayProperties properties,
                                     ObjectProvider<WorkerDiscovery.HostResolver> resolver) {
        return new WorkerDiscovery(prefillPool, properties.prefillWorkers(),
                resolver.getIfAvailable(WorkerDiscovery.HostResolver::system), properties.discoveryInterval());
    }

    /** Fills the decode pool from {@code ripcord.gateway.decode-workers} and keeps it up to date. */
    @Bean(destroyMethod = "close")
    WorkerDiscovery decodeDiscovery(WorkerPool decodePool, GatewayProperties properties,
                                    ObjectProvider<WorkerDiscovery.HostResolver> resolver) {
        return new WorkerDiscovery(decodePool, properties.decodeWorkers(),
                resolver.getIfAvailable(WorkerDiscovery.HostResolver::system), properties.discoveryInterval());
    }

    /**
     * The client for internal calls. Its own connection pool, sized for many concurrent long streams: each
     * request holds one connection to a decode worker and one to a prefill worker for its whole life. Built from
     * Boot's {@code WebClient.Builder}, so every {@code WebClientCustomizer} applies. Its only timeout is the
     * connect timeout; the admission timeout is the legs' ({@link WorkerLeg}), and nothing times a healthy stream.
     */
    @Bean
    WebClient internalWebClient(WebClient.Builder builder, GatewayProperties properties, InternalTls tls,
                                ConnectionProvider ripcordInternalConnections) {
        ConnectionProvider pool = ripcordInternalConnections;
        // TLS (mTLS) to the workers when ripcord.gateway.internal-ssl-bundle names an SSL bundle; see docs/security.md
        HttpClient http = tls.apply(HttpClient.create(pool)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) properties.connectTimeout().toMillis()));
        return builder.clientConnector(new ReactorClientHttpConnector(http)).build();
    }

    /** The internal client's connections, closed with the application context (open streams are gone by then). */
    @Bean(destroyMethod = "dispose")
    ConnectionProvider ripcordInternalConnections() {
        return ConnectionProvider.builder("ripcord-internal")
                .maxConnections(2048)
                .pendingAcquireMaxCount(-1)
                .build();
    }

    @Bean
    RequestContexts requestContexts(CancelPublisher publisher, CancelProperties cancelProperties,
                                    MeterRegistry meters, OpenAiProperties openAi,
                                    ObjectProvider<LifecyclePublisher> lifecycle) {
        return new RequestContexts(publisher, cancelProperties, meters, Clock.systemUTC(), openAi.maxTimeout(),
                lifecycle.getIfAvailable(LifecyclePublisher::disabled));
    }

    @Bean
    TokenGenerator tokenGenerator(WebClient internalWebClient, WorkerPool prefillPool, WorkerPool decodePool,
                                  RequestContexts requestContexts, WorkerResilience resilience,
                                  ObjectProvider<ModelProperties> model, ObjectProvider<PrefixRouting> prefixRouting) {
        ModelProperties served = model.getIfAvailable();
        String identity = served == null ? null : served.identity();
        log.info("model identity {}: decode workers that report another are not paired", identity);
        return new DisaggregatedGenerator(internalWebClient, prefillPool, decodePool, requestContexts, resilience,
                Schedulers.parallel(), identity, prefixRouting.getIfAvailable());
    }
}
