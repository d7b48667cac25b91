package dev.ripcord.worker;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;

import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.KernelMode;
import dev.ripcord.engine.KvPagePool;
import dev.ripcord.engine.NativeIsa;
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.QuantizedDot;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/** What every worker reports about its KV cache and model, in vLLM's terms. */
class WorkerMetricsTest {

    @Test
    void kvCacheUsageIsTheFractionOfThePoolsPagesAllocated() {
        try (InferenceEngine engine = InferenceEngine.create(Preset.TINY, 1,
                EngineOptions.defaults().withThreads(1).withPageTokens(16).withKvPages(8))) {
            KvPagePool pool = engine.pagePool();
            SimpleMeterRegistry meters = new SimpleMeterRegistry();
            new WorkerAutoConfiguration().kvCacheMetrics(engine).bindTo(meters);
            assertThat(meters.get("ripcord.kv.cache.usage.perc").gauge().value()).isZero();

            int[] pages = new int[2];
            pool.allocate(2, pages);
            assertThat(meters.get("ripcord.kv.cache.usage.perc").gauge().value()).isEqualTo(2.0 / 8);
            int[] rest = new int[6];
            pool.allocate(6, rest);
            assertThat(meters.get("ripcord.kv.cache.usage.perc").gauge().value()).isEqualTo(1.0);
            for (int page : pages) {
                pool.free(page);
            }
            for (int page : rest) {
                pool.free(page);
            }
            assertThat(meters.get("ripcord.kv.cache.usage.perc").gauge().value()).isZero();
            assertThat(meters.get("ripcord.cache.config.info").tag("block_size", "16").tag("num_gpu_blocks", "8")
                    .gauge().value()).isEqualTo(1.0);
        }
    }

    @Test
    void everyRipcordMeterCarriesTheModelNameAndOthersDoNot() {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        meters.config().meterFilter(ModelNameTag.filter("stories15M"));
        meters.counter("ripcord.cancellations", "phase", "decode").increment();
        meters.counter("jvm.something").increment();

        assertThat(meters.get("ripcord.cancellations").counter().getId().getTag("model_name")).isEqualTo("stories15M");
        assertThat(meters.get("jvm.something").counter().getId().getTag("model_name")).isNull();
    }

    @Test
    void theModelNameIsTheGatewaysDefaultUnlessGiven() {
        assertThat(properties("small", null, null).servedModelName()).isEqualTo("ripcord-small");
        assertThat(properties(" Tiny", null, null).servedModelName()).isEqualTo("ripcord-tiny");
        assertThat(properties("small", Path.of("/models/stories15M.bin"), null).servedModelName())
                .isEqualTo("stories15M");
        assertThat(properties("small", Path.of("/models/stories15M.bin"), "my-model").servedModelName())
                .isEqualTo("my-model");
    }

    private static EngineProperties properties(String preset, Path checkpoint, String modelName) {
        return new EngineProperties(preset, 42, checkpoint, null, 0, 64, 0, "256MB", 2048, 16, KernelMode.VECTOR,
                modelName, null, NativeIsa.AUTO, QuantizedDot.DECODE, null);
    }
}
