package dev.ripcord.gateway.observability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.ripcord.gateway.GatewayApplication;
import dev.ripcord.gateway.generation.WarmUp;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
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
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

/**
 * Facts about the gateway's logs and traces, through the real application on a real port with two fake workers
 * (tiny Reactor Netty servers speaking the internal NDJSON protocol) and no Kafka:
 * <ul>
 *   <li>every gateway log line about the request, including those written on Netty event-loop threads (the
 *       WebClient's response callbacks), has the request ID in its MDC;</li>
 *   <li>both workers receive a W3C {@code traceparent} of the gateway's trace, the one in the MDC of its log
 *       lines, or the client's own trace when the client sent one.</li>
 * </ul>
 */
@SpringBootTest(classes = RequestObservabilityTest.Gateway.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "ripcord.cancel.propagation=in-band",
                // No Kafka here; and no functional bean may be bound to it by accident.
                "spring.cloud.stream.function.autodetect=false",
                "management.tracing.sampling.probability=1.0",
                "logging.level.dev.ripcord=DEBUG",
                "ripcord.gateway.warm-up-header=true", // as ./ripcord up runs it
        })
class RequestObservabilityTest {

    /** The gateway as it ships: every main configuration and Boot's auto-configuration, no test's configuration. */
    @SpringBootConfiguration
    @EnableAutoConfiguration
    @ComponentScan(basePackageClasses = GatewayApplication.class,
            excludeFilters = @ComponentScan.Filter(type = FilterType.CUSTOM, classes = MainClassesOnly.class))
    static class Gateway {
    }

    /** Leaves out what was compiled from src/test, and the application class (its own scan has no such filter). */
    static final class MainClassesOnly implements TypeFilter {
        @Override
        public boolean match(MetadataReader reader, MetadataReaderFactory factory) throws IOException {
            return reader.getResource().getURL().toString().contains("/test-classes/")
                    || reader.getClassMetadata().getClassName().equals(GatewayApplication.class.getName());
        }
    }

    /** What a fake worker saw of one call: the headers the tests care about. */
    record Call(String path, String requestId, String traceparent) {
    }

    /** Reactor Netty's event-loop threads: {@code reactor-http-epoll-3}, {@code webflux-http-nio-1}, ... */
    private static final String EVENT_LOOP = ".+-http-(epoll|nio|kqueue|io_uring)-\\d+";

    private static final List<Call> calls = new CopyOnWriteArrayList<>();
    private static final DisposableServer decode = worker(InternalApi.DECODE,
            "{\"type\":\"RESERVED\",\"transfer\":\"t-1\"}\n"
                    + "{\"type\":\"TOKEN\",\"index\":0,\"token\":72}\n"
                    + "{\"type\":\"TOKEN\",\"index\":1,\"token\":105,\"finishReason\":\"length\"}\n");
    private static final DisposableServer prefill = worker(InternalApi.PREFILL,
            "{\"type\":\"QUEUED\",\"position\":0}\n{\"type\":\"STARTED\"}\n{\"type\":\"DONE\",\"firstToken\":72}\n");

    @DynamicPropertySource
    static void workers(DynamicPropertyRegistry registry) {
        registry.add("ripcord.gateway.decode-workers", () -> "http://127.0.0.1:" + decode.port());
        registry.add("ripcord.gateway.prefill-workers", () -> "http://127.0.0.1:" + prefill.port());
    }

    @AfterAll
    static void stopWorkers() {
        decode.disposeNow(Duration.ofSeconds(10));
        prefill.disposeNow(Duration.ofSeconds(10));
    }

    @LocalServerPort
    int port;
    @LocalManagementPort
    int managementPort;

    @Autowired
    MeterRegistry meters;

    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final Logger gatewayLogs = (Logger) LoggerFactory.getLogger("dev.ripcord.gateway");

    @BeforeEach
    void captureLogs() {
        calls.clear();
        appender.start();
        gatewayLogs.addAppender(appender);
    }

    @AfterEach
    void stopCapturing() {
        gatewayLogs.detachAppender(appender);
        appender.stop();
    }

    /**
     * What was logged so far. Event loops may still log about a finished request while the test reads, and the
     * appender's list is a plain ArrayList: copied under the appender's lock, which every append holds.
     */
    private List<ILoggingEvent> logged() {
        synchronized (appender) {
            return List.copyOf(appender.list);
        }
    }

    @Test
    void everyGatewayLogLineAboutARequestCarriesItsIdInTheMdcOnEventLoopThreadsToo() {
        String id = "obs-mdc-1";
        complete(id, Map.of());

        List<ILoggingEvent> aboutIt = logged().stream()
                .filter(e -> e.getFormattedMessage().contains(id)).toList();
        assertThat(aboutIt).as("log lines about %s", id).isNotEmpty();
        assertThat(aboutIt).allSatisfy(e -> assertThat(e.getMDCPropertyMap())
                .as("MDC of [%s] %s", e.getThreadName(), e.getFormattedMessage())
                .containsEntry("requestId", id));
        assertThat(aboutIt).as("lines written on a Netty event loop")
                .anySatisfy(e -> assertThat(e.getThreadName()).matches(EVENT_LOOP));
    }

    @Test
    void bothWorkersReceiveTheTraceparentOfTheGatewaysTrace() {
        String id = "obs-trace-1";
        complete(id, Map.of());

        assertThat(calls).extracting(Call::path).containsExactlyInAnyOrder(InternalApi.DECODE, InternalApi.PREFILL);
        // Both legs under the one internal ID the gateway minted for the request, made from the client's.
        assertThat(calls).extracting(Call::requestId)
                .allSatisfy(wire -> assertThat(wire).matches(id + ":[A-Za-z0-9]{22}"))
                .containsOnly(calls.getFirst().requestId());
        String traceId = traceIdOf(calls.getFirst().traceparent());
        assertThat(calls).allSatisfy(call -> assertThat(call.traceparent()).matches("00-[0-9a-f]{32}-[0-9a-f]{16}-01"))
                .extracting(call -> traceIdOf(call.traceparent())).containsOnly(traceId);
        // ... and it is the trace the gateway's own log lines about the request carry.
        assertThat(logged().stream().filter(e -> e.getFormattedMessage().contains(id)))
                .isNotEmpty()
                .allSatisfy(e -> assertThat(e.getMDCPropertyMap()).containsEntry("traceId", traceId));
    }

    @Test
    void aClientsTraceContinuesThroughTheGatewayToBothWorkers() {
        String clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
        complete("obs-trace-2", Map.of("traceparent", "00-" + clientTrace + "-00f067aa0ba902b7-01"));

        assertThat(calls).hasSize(2).allSatisfy(call -> {
            assertThat(traceIdOf(call.traceparent())).isEqualTo(clientTrace);
            assertThat(call.traceparent()).doesNotContain("00f067aa0ba902b7"); // the gateway's spans are children
        });
    }

    @Test
    void aCompletionIsMeteredUnderVllmsNamesWithBucketsAndTheModelName() {
        double tokensBefore = count("ripcord.generation.tokens");
        double promptBefore = count("ripcord.prompt.tokens");
        long ttftBefore = timerCount("ripcord.time.to.first.token");
        long itlBefore = timerCount("ripcord.inter.token.latency");
        long e2eBefore = timerCount("ripcord.e2e.request.latency");
        double lengthBefore = outcomes("length", "none");

        complete("obs-metrics-1", Map.of());

        assertThat(count("ripcord.generation.tokens") - tokensBefore).isEqualTo(2.0);
        assertThat(timerCount("ripcord.time.to.first.token") - ttftBefore).isEqualTo(1);
        assertThat(timerCount("ripcord.inter.token.latency") - itlBefore).as("2 tokens, 1 gap").isEqualTo(1);
        assertThat(timerCount("ripcord.e2e.request.latency") - e2eBefore).isEqualTo(1);
        assertThat(outcomes("length", "none") - lengthBefore).isEqualTo(1);
        assertThat(count("ripcord.prompt.tokens") - promptBefore).as("the prompt, counted at the first token")
                .isPositive();
        // The generation leaves the gauges when its Flux terminates, which may come just after the client has read
        // the last byte: wait for that state (a count), not for a time.
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            assertThat(meters.get("ripcord.num.requests.running").gauge().value()).isZero();
            assertThat(meters.get("ripcord.num.requests.waiting").gauge().value()).isZero();
        });
        // ... under the Prometheus names docs/metrics.md gives them, with buckets and the model's name.
        String scrape = WebClient.create("http://127.0.0.1:" + managementPort).get().uri("/actuator/prometheus")
                .retrieve().bodyToMono(String.class).block(Duration.ofSeconds(30));
        for (String series : List.of("ripcord_time_to_first_token_seconds_bucket",
                "ripcord_inter_token_latency_seconds_bucket", "ripcord_e2e_request_latency_seconds_bucket",
                "ripcord_request_prompt_tokens_bucket", "ripcord_request_generation_tokens_bucket",
                "ripcord_prompt_tokens_total", "ripcord_generation_tokens_total", "ripcord_request_success_total",
                "ripcord_num_requests_running", "ripcord_num_requests_waiting")) {
            assertThat(scrape.lines()).as(series).anyMatch(line -> line.startsWith(series + "{")
                    && line.contains("model_name=\"ripcord-small\""));
        }
        assertThat(scrape.lines()).anyMatch(line -> line.startsWith("ripcord_request_success_total{")
                && line.contains("finished_reason=\"length\"") && line.contains("error_code=\"none\""));
        assertThat(scrape.lines()).anyMatch(line -> line.startsWith("ripcord_time_to_first_token_seconds_bucket{")
                && line.contains("le=\"0.001\""));
    }

    /** Regression: the 240 requests of {@code ./ripcord up}'s warm-up were counted as the user's. */
    @Test
    void aWarmUpRequestIsServedButNotMetered() {
        double tokensBefore = count("ripcord.generation.tokens");
        long ttftBefore = timerCount("ripcord.time.to.first.token");
        long e2eBefore = timerCount("ripcord.e2e.request.latency");
        double lengthBefore = outcomes("length", "none");
        double usersBefore = count("ripcord.gateway.user.requests");

        complete("obs-warm-1", Map.of(WarmUp.HEADER, "1"));
        complete("obs-warm-2", Map.of(WarmUp.HEADER, "1"));
        complete("obs-user-1", Map.of());

        assertThat(count("ripcord.generation.tokens") - tokensBefore).as("the user's request only").isEqualTo(2.0);
        assertThat(timerCount("ripcord.time.to.first.token") - ttftBefore).isEqualTo(1);
        assertThat(timerCount("ripcord.e2e.request.latency") - e2eBefore).isEqualTo(1);
        assertThat(outcomes("length", "none") - lengthBefore).isEqualTo(1);
        assertThat(count("ripcord.gateway.user.requests") - usersBefore).isEqualTo(1);
    }

    private double count(String counter) {
        return meters.find(counter).counters().stream().mapToDouble(c -> c.count()).sum();
    }

    private long timerCount(String timer) {
        return meters.find(timer).timers().stream().mapToLong(t -> t.count()).sum();
    }

    private double outcomes(String reason, String code) {
        return meters.find("ripcord.request.success").tag("finished_reason", reason).tag("error_code", code)
                .counters().stream().mapToDouble(c -> c.count()).sum();
    }

    private void complete(String id, Map<String, String> headers) {
        String body = WebClient.create("http://127.0.0.1:" + port).post().uri("/v1/completions")
                .header("X-Request-Id", id)
                .headers(h -> headers.forEach(h::set))
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"hello\",\"max_tokens\":2}")
                .retrieve().bodyToMono(String.class).block(Duration.ofSeconds(30));
        assertThat(body).contains("\"finish_reason\":\"length\"");
    }

    private static String traceIdOf(String traceparent) {
        assertThat(traceparent).isNotNull();
        return traceparent.split("-")[1];
    }

    private static DisposableServer worker(String path, String ndjson) {
        return HttpServer.create().host("127.0.0.1").port(0)
                .route(routes -> routes.post(path, (request, response) -> {
                    calls.add(new Call(path, request.requestHeaders().get(RequestIds.HEADER),
                            request.requestHeaders().get("traceparent")));
                    return request.receive().then().then(response.header("Content-Type", InternalApi.NDJSON)
                            .sendString(Mono.just(ndjson), StandardCharsets.UTF_8).then());
                }))
                .bindNow(Duration.ofSeconds(10));
    }
}
