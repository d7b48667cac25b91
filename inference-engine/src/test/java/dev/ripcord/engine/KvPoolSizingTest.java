package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** How many pages the pool gets from {@code kvPages}, a memory budget, or neither. */
class KvPoolSizingTest {

    /** stories15M's shape: 6 layers, 6 KV heads of 48, a 256-token context (pages of 64 tokens: 4 per context). */
    private static final ModelConfig STORIES15M = ModelConfig.llama2c(288, 768, 6, 6, 6, 32000, 256, true);
    private static final KvLayout LAYOUT = KvLayout.of(STORIES15M, 64);

    @Test
    void budgetGivesTheWholePagesThatFitInIt() {
        EngineOptions options = EngineOptions.defaults().withKvMemoryBytes(10 * LAYOUT.pageBytes() + 1);

        assertThat(InferenceEngine.poolPages(STORIES15M, options)).isEqualTo(10);
    }

    @Test
    void budgetSmallerThanOneContextStillHoldsOneFullContext() {
        EngineOptions options = EngineOptions.defaults().withKvMemoryBytes(1);

        assertThat(InferenceEngine.poolPages(STORIES15M, options)).isEqualTo(4);
    }

    @Test
    void kvPagesOverridesTheBudget() {
        EngineOptions options = EngineOptions.defaults().withKvMemoryBytes(1L << 30).withKvPages(7);

        assertThat(InferenceEngine.poolPages(STORIES15M, options)).isEqualTo(7);
    }

    @Test
    void withNeitherThePoolHoldsTwoFullContexts() {
        assertThat(InferenceEngine.poolPages(STORIES15M, EngineOptions.defaults())).isEqualTo(8);
    }

    @Test
    void anEngineSizesItsPoolFromTheBudget() {
        ModelConfig tiny = Preset.TINY.config();
        KvLayout layout = KvLayout.of(tiny, 64);
        EngineOptions options = EngineOptions.defaults().withThreads(1).withKvMemoryBytes(20 * layout.pageBytes());
        try (InferenceEngine engine = InferenceEngine.create(Preset.TINY, 42, options)) {
            assertThat(engine.options().kvPages()).isEqualTo(20);
            assertThat(engine.options().kvMemoryBytes()).isEqualTo(20 * layout.pageBytes());
        }
    }
}
