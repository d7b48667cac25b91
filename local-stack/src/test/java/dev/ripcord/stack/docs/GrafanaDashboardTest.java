package dev.ripcord.stack.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * docs/grafana/ripcord-dashboard.json is an importable dashboard (a Prometheus datasource variable that every panel
 * uses) whose queries only name metrics docs/metrics.md lists, so the dashboard cannot drift from the code (and
 * {@link MetricsDocumentationTest} keeps the page true to the code).
 */
class GrafanaDashboardTest {

    /** A metric name in PromQL: ours and the libraries' prefixes (label names and functions never start so). */
    private static final Pattern METRIC = Pattern.compile(
            "\\b((?:ripcord|resilience4j|http|jvm|process|system)_[a-zA-Z0-9_]+)\\b(?!\\s*=)");
    /** Series suffixes Prometheus adds to a documented base name. */
    private static final Pattern SUFFIX = Pattern.compile("_(bucket|count|sum|max)$");

    private final Path root = RepositoryFiles.root();
    private final JsonNode dashboard = JsonMapper.builder().build()
            .readTree(RepositoryFiles.read(root.resolve("docs/grafana/ripcord-dashboard.json")));

    @Test
    void everyQueriedMetricIsDocumented() {
        Set<String> documented = RepositoryFiles.documentedSeries(root);
        Set<String> queried = new TreeSet<>();
        for (String expr : expressions()) {
            Matcher m = METRIC.matcher(expr);
            while (m.find()) {
                queried.add(m.group(1));
            }
        }
        assertThat(queried).as("metrics the dashboard queries").isNotEmpty();
        assertThat(queried).allSatisfy(metric -> assertThat(
                documented.contains(metric) || documented.contains(SUFFIX.matcher(metric).replaceFirst("")))
                .as("%s (queried by the dashboard) is in docs/metrics.md", metric).isTrue());
    }

    @Test
    void itCoversWhatOperatorsWatch() {
        List<String> exprs = expressions();
        for (String metric : List.of("ripcord_time_to_first_token_seconds_bucket", "ripcord_generation_tokens_total",
                "ripcord_prefill_queue", "ripcord_decode_awaiting_kv", "ripcord_cancellations_total",
                "ripcord_cancel_abort_latency_seconds_bucket", "ripcord_kv_cache_live_bytes",
                "ripcord_kv_live_sessions", "resilience4j_circuitbreaker_state",
                "resilience4j_bulkhead_available_concurrent_calls", "ripcord_cancel_published_total")) {
            assertThat(exprs).as("a panel querying %s", metric).anyMatch(expr -> expr.contains(metric));
        }
    }

    /** Every metric of the vLLM-named serving set (docs/metrics.md's first table) has a panel. */
    @Test
    void itHasAPanelForEveryServingMetric() {
        List<String> exprs = expressions();
        for (String metric : SERVING_SERIES) {
            assertThat(exprs).as("a panel querying %s", metric).anyMatch(expr -> expr.contains(metric));
        }
    }

    /** The series of the serving table, as a dashboard queries them (histograms by their buckets). */
    static final List<String> SERVING_SERIES = List.of("ripcord_num_requests_running", "ripcord_num_requests_waiting",
            "ripcord_kv_cache_usage_perc", "ripcord_time_to_first_token_seconds_bucket",
            "ripcord_inter_token_latency_seconds_bucket", "ripcord_e2e_request_latency_seconds_bucket",
            "ripcord_request_queue_time_seconds_bucket", "ripcord_request_prefill_time_seconds_bucket",
            "ripcord_request_decode_time_seconds_bucket", "ripcord_prompt_tokens_total",
            "ripcord_generation_tokens_total", "ripcord_request_prompt_tokens_bucket",
            "ripcord_request_generation_tokens_bucket", "ripcord_request_success_total");

    @Test
    void everyPanelUsesTheDatasourceVariable() {
        assertThat(dashboard.path("templating").path("list")).anySatisfy(variable -> {
            assertThat(variable.path("type").asString()).isEqualTo("datasource");
            assertThat(variable.path("query").asString()).isEqualTo("prometheus");
            assertThat(variable.path("name").asString()).isEqualTo("datasource");
        });
        assertThat(dashboard.path("panels")).isNotEmpty().allSatisfy(panel -> {
            assertThat(panel.path("datasource").path("uid").asString()).isEqualTo("${datasource}");
            assertThat(panel.path("targets")).isNotEmpty();
        });
    }

    private List<String> expressions() {
        List<String> exprs = new ArrayList<>();
        for (JsonNode panel : dashboard.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                exprs.add(target.path("expr").asString());
            }
        }
        return exprs;
    }
}
