package dev.ripcord.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;

import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.KvLayout;
import dev.ripcord.engine.ModelConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

class KvMemoryTest {

    private static final long GIB = 1L << 30;

    @Test
    void sizesAreBinaryWithOrWithoutTheI() {
        assertThat(KvMemory.parse("256MB", GIB).bytes()).isEqualTo(256L << 20);
        assertThat(KvMemory.parse("256MiB", GIB).bytes()).isEqualTo(256L << 20);
        assertThat(KvMemory.parse("1GiB", GIB).bytes()).isEqualTo(GIB);
        assertThat(KvMemory.parse("1.5 gb", GIB).bytes()).isEqualTo(3L << 29);
        assertThat(KvMemory.parse("64KB", GIB).bytes()).isEqualTo(64L << 10);
        assertThat(KvMemory.parse("4096", GIB).bytes()).isEqualTo(4096);
    }

    @Test
    void aShareIsOfTheMemoryTheProcessMayUse() {
        assertThat(KvMemory.parse("25%", 8 * GIB).bytes()).isEqualTo(2 * GIB);
        assertThat(KvMemory.parse("12.5%", 8 * GIB).bytes()).isEqualTo(GIB);
        assertThat(KvMemory.parse("100%", 8 * GIB).bytes()).isEqualTo(8 * GIB);
    }

    @Test
    void aShareOfThisProcessReadsItsMemoryLimit() {
        assertThat(KvMemory.parse("50%").bytes()).isEqualTo(KvMemory.processMemory() / 2);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "MB", "-1MB", "0", "0%", "101%", "1PB", "12 bananas", "25 %%", "1e9"})
    void anythingElseIsRefusedNamingTheProperty(String text) {
        assertThatThrownBy(() -> KvMemory.parse(text, GIB))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ripcord.engine.kv-memory");
    }

    /**
     * {@code ./ripcord up} serves stories15M with the workers' defaults: their KV pools must hold 32 concurrent
     * requests of a full 256-token context each. Guards against the pool sized to two contexts, which refused all
     * but two of eight concurrent requests.
     */
    @Test
    void theDefaultBudgetHoldsThirtyTwoFullStories15MContexts() {
        EngineProperties defaults = new Binder(new MapConfigurationPropertySource(Map.of()))
                .bindOrCreate("ripcord.engine", EngineProperties.class);
        ModelConfig stories15M = ModelConfig.llama2c(288, 768, 6, 6, 6, 32000, 256, true);
        EngineOptions options = EngineOptions.defaults().withPageTokens(defaults.pageTokens())
                .withKvPages(defaults.kvPages())
                .withKvMemoryBytes(KvMemory.parse(defaults.kvMemory()).bytes());

        int pages = InferenceEngine.poolPages(stories15M, options);

        assertThat(defaults.kvPages()).isZero();
        assertThat(pages).isGreaterThanOrEqualTo(32 * KvLayout.of(stories15M, defaults.pageTokens()).pagesFor(256));
    }
}
