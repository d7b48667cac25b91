package dev.ripcord.stack.serve;

import java.net.http.HttpClient;
import java.util.List;
import java.util.Map;

import dev.ripcord.stack.serve.MultiTurnBench.TurnResult;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MultiTurnBenchTest {

    @Test
    void theMultiTurnScenarioIsParsedWithItsDefaults() {
        ServeOptions o = ServeOptions.parse(new String[] {"--target=r=http://127.0.0.1:1", "--scenario=multi-turn",
                "--turns=5", "--prefill-metrics=r=http://127.0.0.1:9081,http://127.0.0.1:9083"}, Map.of());
        assertThat(o.multiTurn()).isEqualTo(new ServeOptions.MultiTurn(2, 5, 1024, 32));
        assertThat(o.prefillMetrics().get("r")).extracting(java.net.URI::getPort).containsExactly(9081, 9083);
        assertThat(ServeOptions.parse(new String[] {"--target=r=http://127.0.0.1:1"}, Map.of()).multiTurn()).isNull();
        assertThatThrownBy(() -> ServeOptions.parse(new String[] {"--target=r=http://127.0.0.1:1", "--turns=3"},
                Map.of())).hasMessageContaining("--turns belongs to --scenario=multi-turn");
        assertThatThrownBy(() -> ServeOptions.parse(new String[] {"--target=r=http://127.0.0.1:1",
                "--prefill-metrics=x=http://127.0.0.1:2"}, Map.of())).hasMessageContaining("naming a --target");
    }

    @Test
    void aScrapesPrefixCacheCountersAreSummedOverTheirSeriesAndAbsentOnesAreNone() {
        String scrape = """
                # HELP ripcord_prefix_cache_hits_total prompt tokens served from the cache
                # TYPE ripcord_prefix_cache_hits_total counter
                ripcord_prefix_cache_hits_total{model_name="m",service="prefill"} 960.0
                ripcord_prefix_cache_queries_total{model_name="m",service="prefill"} 1200.0
                ripcord_prefix_cache_hits_total_other 5.0
                ripcord_kv_pages_live{service="prefill"} 3.0
                """;
        assertThat(MultiTurnBench.parse(scrape)).containsExactly(960, 1200);
        assertThat(MultiTurnBench.parse("ripcord_kv_pages_live 3.0\n")).isNull();
    }

    @Test
    void laterTurnsAreReportedApartFromFirstTurns() {
        List<TurnResult> turns = List.of(new TurnResult(1, true, 9_000_000_000L, null),
                new TurnResult(2, true, 1_000_000_000L, null), new TurnResult(3, true, 3_000_000_000L, null),
                new TurnResult(1, true, 7_000_000_000L, null), new TurnResult(2, false, 0, "timeout"));
        assertThat(MultiTurnBench.p50(turns, true)).isEqualTo(8.0);
        assertThat(MultiTurnBench.p50(turns, false)).isEqualTo(2.0);
    }

    @Test
    void everyPlainCallOfTheBenchSpeaksHttp11() {
        try (HttpClient http = ServeBench.http()) {
            assertThat(http.version()).as("no h2c upgrade asked of any target").isEqualTo(HttpClient.Version.HTTP_1_1);
        }
    }

    @Test
    void eachTurnsPromptStartsWithThePreviousTurnsWholePrompt() {
        String words = MultiTurnBench.words(new java.util.Random(1), 5);
        assertThat(words.split(" ")).hasSize(6);
        assertThat(MultiTurnBench.words(new java.util.Random(1), 5)).isEqualTo(words);
    }
}
