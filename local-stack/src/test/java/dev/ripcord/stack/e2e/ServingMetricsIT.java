package dev.ripcord.stack.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.ripcord.stack.GatewayClient;
import dev.ripcord.stack.GatewayClient.Answer;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.Prometheus;
import dev.ripcord.stack.cancel.Prometheus.Sample;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * A Prometheus scrape of each service shows the serving metrics docs/metrics.md promises under vLLM's names, with
 * {@code model_name}, bucket series for every histogram, and counts that move by exactly what two completions did;
 * and every metric the Grafana dashboard queries is in a scrape of some service. On the shared default stack (no
 * stack configuration of its own).
 */
@LocalStackTest
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a hang guard, not a time assertion
class ServingMetricsIT {

    private static final int MAX_TOKENS = 6;

    /** Histograms (base names) each service must serve with {@code _bucket}, {@code _count} and {@code _sum}. */
    private static final Map<Role, List<String>> HISTOGRAMS = Map.of(
            Role.GATEWAY, List.of("ripcord_time_to_first_token_seconds", "ripcord_inter_token_latency_seconds",
                    "ripcord_e2e_request_latency_seconds", "ripcord_request_prompt_tokens",
                    "ripcord_request_generation_tokens"),
            Role.PREFILL, List.of("ripcord_request_queue_time_seconds", "ripcord_request_prefill_time_seconds"),
            Role.DECODE, List.of("ripcord_request_queue_time_seconds", "ripcord_request_decode_time_seconds"));

    /** Gauges and counters each service must serve. */
    private static final Map<Role, List<String>> SERIES = Map.of(
            Role.GATEWAY, List.of("ripcord_num_requests_running", "ripcord_num_requests_waiting",
                    "ripcord_prompt_tokens_total", "ripcord_generation_tokens_total", "ripcord_request_success_total"),
            Role.PREFILL, List.of("ripcord_num_requests_running", "ripcord_num_requests_waiting",
                    "ripcord_kv_cache_usage_perc", "ripcord_cache_config_info"),
            Role.DECODE, List.of("ripcord_num_requests_running", "ripcord_num_requests_waiting",
                    "ripcord_kv_cache_usage_perc", "ripcord_cache_config_info"));

    /**
     * Metrics the dashboard queries that a service registers only on their first event, with that event's labels
     * (a cancel's phase and path, a publish's outcome, a dead letter): absent from a scrape of a stack that has not
     * seen one yet. Every other queried metric must be in a scrape.
     */
    private static final Set<String> CREATED_ON_FIRST_EVENT = Set.of("ripcord_cancellations_total",
            "ripcord_cancel_published_total", "ripcord_cancel_dead_lettered_total",
            "ripcord_cancel_publish_retries_total", "ripcord_cancel_kafka_delivery_seconds_bucket",
            "ripcord_kv_sessions_total", "ripcord_kv_lease_expiries_total");

    private static final Pattern METRIC = Pattern.compile(
            "\\b((?:ripcord|resilience4j|http|jvm|process|system)_[a-zA-Z0-9_]+)\\b(?!\\s*=)");

    @Test
    void eachServiceServesTheServingMetricsAndTheyCountTwoCompletionsExactly(TestStack stack) {
        stack.awaitWorkersIdle();
        Map<Role, Prometheus> before = scrapeAll(stack);
        Answer plain = stack.gateway().send(GatewayClient.COMPLETIONS,
                GatewayClient.completionRequest(stack.modelName(), Prompts.ofBytes(40), MAX_TOKENS), null);
        ObjectNode streamed = GatewayClient.completionRequest(stack.modelName(), Prompts.ofBytes(20), MAX_TOKENS);
        streamed.put("stream", true);
        streamed.putObject("stream_options").put("include_usage", true);
        Answer stream = stack.gateway().send(GatewayClient.COMPLETIONS, streamed, null);
        assertThat(plain.finishReason()).isEqualTo("length");
        assertThat(stream.finishReason()).isEqualTo("length");
        stack.awaitWorkersIdle();
        Map<Role, Prometheus> after = scrapeAll(stack);

        String model = stack.modelName();
        for (Role role : Role.values()) {
            Prometheus scrape = after.get(role);
            for (String name : SERIES.get(role)) {
                assertThat(scrape.samples(name, "model_name", model)).as("%s on %s", name, role).isNotEmpty();
            }
            for (String histogram : HISTOGRAMS.get(role)) {
                List<Sample> buckets = scrape.samples(histogram + "_bucket", "model_name", model);
                assertThat(buckets).as("%s_bucket on %s", histogram, role).hasSizeGreaterThan(5);
                assertThat(scrape.sum(histogram + "_bucket", "model_name", model, "le", "+Inf"))
                        .as("%s: the +Inf bucket is the count", histogram)
                        .isEqualTo(scrape.sum(histogram + "_count", "model_name", model));
            }
        }

        Prometheus gateway = after.get(Role.GATEWAY);
        Prometheus gatewayBefore = before.get(Role.GATEWAY);
        assertThat(delta(gateway, gatewayBefore, "ripcord_time_to_first_token_seconds_count")).isEqualTo(2);
        assertThat(delta(gateway, gatewayBefore, "ripcord_inter_token_latency_seconds_count"))
                .isEqualTo(2 * (MAX_TOKENS - 1));
        assertThat(delta(gateway, gatewayBefore, "ripcord_e2e_request_latency_seconds_count")).isEqualTo(2);
        assertThat(delta(gateway, gatewayBefore, "ripcord_generation_tokens_total")).isEqualTo(2 * MAX_TOKENS);
        assertThat(delta(gateway, gatewayBefore, "ripcord_prompt_tokens_total"))
                .isEqualTo(plain.promptTokens() + stream.promptTokens());
        assertThat(delta(gateway, gatewayBefore, "ripcord_request_generation_tokens_sum")).isEqualTo(2 * MAX_TOKENS);
        assertThat(gateway.sum("ripcord_request_success_total", "finished_reason", "length", "error_code", "none")
                - gatewayBefore.sum("ripcord_request_success_total", "finished_reason", "length", "error_code", "none"))
                .isEqualTo(2);

        for (Role worker : List.of(Role.PREFILL, Role.DECODE)) {
            Prometheus scrape = after.get(worker);
            assertThat(delta(scrape, before.get(worker), "ripcord_request_queue_time_seconds_count"))
                    .as("queue time on %s", worker).isEqualTo(2);
            assertThat(scrape.samples("ripcord_kv_cache_usage_perc")).allSatisfy(sample ->
                    assertThat(sample.value()).isBetween(0.0, 1.0));
            assertThat(scrape.samples("ripcord_cache_config_info", "block_size",
                    TestStacks.DEFAULT_PROPERTIES.get("ripcord.engine.page-tokens"), "num_gpu_blocks",
                    TestStacks.DEFAULT_PROPERTIES.get("ripcord.engine.kv-pages")))
                    .as("the KV cache's configuration on %s", worker).singleElement()
                    .extracting(Sample::value).isEqualTo(1.0);
        }
        assertThat(delta(after.get(Role.PREFILL), before.get(Role.PREFILL), "ripcord_request_prefill_time_seconds_count"))
                .isEqualTo(2);
        assertThat(delta(after.get(Role.DECODE), before.get(Role.DECODE), "ripcord_request_decode_time_seconds_count"))
                .isEqualTo(2);
    }

    @Test
    void everyMetricTheDashboardQueriesIsInAScrapeOfSomeService(TestStack stack) throws Exception {
        Map<Role, Prometheus> scrapes = scrapeAll(stack);
        Set<String> queried = dashboardMetrics();
        assertThat(queried).as("metrics the dashboard queries").isNotEmpty();
        Set<String> missing = new TreeSet<>();
        for (String metric : queried) {
            boolean served = scrapes.values().stream().anyMatch(scrape -> !scrape.samples(metric).isEmpty());
            if (!served) {
                missing.add(metric);
            }
        }
        assertThat(missing).as("dashboard metrics no service serves").isSubsetOf(CREATED_ON_FIRST_EVENT);
    }

    private static Set<String> dashboardMetrics() throws Exception {
        Path file = TestStacks.repositoryRoot().resolve("docs/grafana/ripcord-dashboard.json");
        JsonNode dashboard = JsonMapper.builder().build().readTree(Files.readString(file));
        Set<String> metrics = new TreeSet<>();
        for (JsonNode panel : dashboard.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                Matcher m = METRIC.matcher(target.path("expr").asString());
                while (m.find()) {
                    metrics.add(m.group(1));
                }
            }
        }
        return metrics;
    }

    private static Map<Role, Prometheus> scrapeAll(TestStack stack) {
        return Map.of(Role.GATEWAY, Prometheus.scrape(stack.url(Role.GATEWAY)),
                Role.PREFILL, Prometheus.scrape(stack.url(Role.PREFILL)),
                Role.DECODE, Prometheus.scrape(stack.url(Role.DECODE)));
    }

    private static double delta(Prometheus after, Prometheus before, String name) {
        return after.sum(name) - before.sum(name);
    }
}
