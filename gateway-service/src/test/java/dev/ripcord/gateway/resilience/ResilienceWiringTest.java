package dev.ripcord.gateway.resilience;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.regex.Pattern;

import dev.ripcord.gateway.GatewayApplication;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.FilterType;
import org.springframework.core.type.classreading.MetadataReader;
import org.springframework.core.type.classreading.MetadataReaderFactory;
import org.springframework.core.type.filter.TypeFilter;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;

/**
 * The gateway as it ships, with its real serving core, pointed at workers that refuse every connection: what a
 * client and an operator see when no worker is available (contract C2). The client gets a 503 with
 * {@code Retry-After} and an OpenAI body with code {@code service_unavailable}; Prometheus shows one breaker and
 * one bulkhead per worker instance, named {@code <role>:<host>:<port>}, and the retry outcomes per role.
 */
@SpringBootTest(classes = ResilienceWiringTest.Gateway.class,
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "ripcord.cancel.propagation=in-band",
                "ripcord.gateway.auth.enabled=false",
                // A NettyServerCustomizer bean is a Function, which Spring Cloud Stream would bind to Kafka on its own.
                "spring.cloud.stream.function.autodetect=false",
                "ripcord.gateway.resilience.retry-after=7s",
                "ripcord.gateway.resilience.retry.initial-backoff=1ms",
                "ripcord.gateway.resilience.retry.max-backoff=5ms"})
class ResilienceWiringTest {

    static final int DECODE_PORT = freePort();
    static final int PREFILL_PORT = freePort();

    @DynamicPropertySource
    static void workers(DynamicPropertyRegistry registry) {
        registry.add("ripcord.gateway.decode-workers", () -> "http://127.0.0.1:" + DECODE_PORT);
        registry.add("ripcord.gateway.prefill-workers", () -> "http://127.0.0.1:" + PREFILL_PORT);
    }

    @LocalServerPort
    int port;
    @LocalManagementPort
    int managementPort;

    private WebTestClient http;

    @BeforeEach
    void client() {
        http = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(Duration.ofSeconds(20))
                .build();
    }

    @Test
    void noWorkerAvailableIsA503WithRetryAfterAndAnOpenAiBodyAndTheBreakersAreInPrometheus() {
        http.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"hi\",\"max_tokens\":1}")
                .exchange()
                .expectStatus().isEqualTo(503)
                .expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "7")
                .expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectBody()
                .jsonPath("$.error.code").isEqualTo("service_unavailable")
                .jsonPath("$.error.type").isEqualTo("server_error")
                .jsonPath("$.error.message").isEqualTo("no decode worker is available; retry after 7 s");

        String scrape = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + managementPort).build()
                .get().uri("/actuator/prometheus").exchange().expectStatus().isOk()
                .expectBody(String.class).returnResult().getResponseBody();
        String decode = "decode:127.0.0.1:" + DECODE_PORT;
        String prefill = "prefill:127.0.0.1:" + PREFILL_PORT;
        assertThat(scrape)
                .containsPattern(series("resilience4j_circuitbreaker_state", "name=\"" + decode + "\"",
                        "state=\"closed\"") + " 1\\.0")
                .containsPattern(series("resilience4j_circuitbreaker_state", "name=\"" + prefill + "\"",
                        "state=\"open\"") + " 0\\.0")
                .containsPattern(series("resilience4j_bulkhead_available_concurrent_calls", "name=\"" + decode + "\"")
                        + " 1024\\.0")
                .containsPattern(series("resilience4j_circuitbreaker_calls_seconds_count", "kind=\"failed\"",
                        "name=\"" + decode + "\"") + " 3(?:\\.0)?")
                .containsPattern(series("resilience4j_retry_calls_total", "kind=\"failed_with_retry\"",
                        "name=\"decode\"") + " 1\\.0");
    }

    /** A Prometheus series with (at least) these labels, in Prometheus' alphabetical label order. */
    private static String series(String metric, String... labels) {
        StringBuilder pattern = new StringBuilder(Pattern.quote(metric) + "\\{");
        for (String label : labels) {
            pattern.append("(?:[^}]*,)?").append(Pattern.quote(label));
        }
        return pattern.append("[^}]*}").toString();
    }

    private static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The gateway application's configurations, without the configurations that other tests compile. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @ComponentScan(basePackageClasses = GatewayApplication.class,
            excludeFilters = @ComponentScan.Filter(type = FilterType.CUSTOM, classes = MainClassesOnly.class))
    static class Gateway {
    }

    static final class MainClassesOnly implements TypeFilter {
        @Override
        public boolean match(MetadataReader reader, MetadataReaderFactory factory) throws IOException {
            return reader.getResource().getURL().toString().contains("/test-classes/")
                    || reader.getClassMetadata().getClassName().equals(GatewayApplication.class.getName());
        }
    }
}
