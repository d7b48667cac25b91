package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.engine.gguf.GgufModelTest;
import dev.ripcord.engine.tools.GgufConvert;
import dev.ripcord.engine.weights.RandomWeights;
import dev.ripcord.format.gguf.GgmlType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The prefix cache serves exactly what a cold run computes: a prompt whose prefix came from the cache gives the
 * tokens and logits of the same prompt computed from scratch, bit for bit, greedy and seeded, on a llama2.c-shaped
 * model and on a quantized GGUF file; and no cancel, wherever it lands (before the first chunk, inside a layer,
 * between chunks, after the last chunk while the KV would be in flight), leaves a page in the cache that changes a
 * later run. Keys here are made up per prompt page the way {@code PrefixKeys} chains them; the engine treats them
 * as opaque.
 */
class PrefixCacheTest {
    static final int PAGE = 16;
    static final ModelConfig FOUR_LAYERS = ModelConfig.llama2c(64, 176, 4, 4, 2, 259, 512, true);

    @RegisterExtension
    static final Engines engines = new Engines();

    @TempDir
    Path dir;

    static EngineOptions options() {
        return Engines.options().withThreads(2).withPageTokens(PAGE);
    }

    /** Chained keys of the prompt's complete pages: a stand-in for {@code PrefixKeys} (FNV-style over tokens). */
    static long[] keys(int[] prompt) {
        long[] keys = new long[prompt.length / PAGE];
        long parent = 0x9E3779B97F4A7C15L;
        for (int i = 0; i < keys.length; i++) {
            long h = parent;
            for (int t = i * PAGE; t < (i + 1) * PAGE; t++) {
                h = (h ^ prompt[t]) * 0x100000001B3L;
            }
            keys[i] = parent = h;
        }
        return keys;
    }

    record Output(int cachedTokens, int[] tokens, float[] logits) {
    }

    /** Prefills {@code prompt} in chunks (from the cache when {@code cached}), samples and decodes 6 tokens. */
    static Output run(InferenceEngine engine, int[] prompt, SamplingParams sampling, int chunk, boolean cached) {
        Sequence seq = engine.newSequence(sampling);
        try {
            int reused = cached ? engine.reusePrefix(seq, prompt, keys(prompt)) : 0;
            TestData.prefill(engine, seq, prompt, chunk);
            int[] tokens = new int[7];
            tokens[0] = engine.sample(seq);
            for (int i = 1; i < tokens.length; i++) {
                tokens[i] = engine.decodeStep(List.of(seq))[0];
            }
            return new Output(reused, tokens, engine.logits(seq));
        } finally {
            engine.free(seq);
        }
    }

    static void assertSame(Output cold, Output warm, String what) {
        assertThat(warm.tokens()).as("%s: tokens", what).containsExactly(cold.tokens());
        assertThat(warm.logits()).as("%s: logits after the last step", what).containsExactly(cold.logits());
    }

    @Test
    void aCachedPrefixGivesAColdRunsOutputBitForBitOnALlama2cModel() {
        InferenceEngine cold = engines.create(Preset.TINY, 11, options().withPrefixCachePages(0));
        InferenceEngine warm = engines.create(Preset.TINY, 11, options());
        exactness(cold, warm, 259);
    }

    @Test
    void aCachedPrefixGivesAColdRunsOutputBitForBitOnAQuantizedGgufModel() throws IOException {
        ModelConfig config = ModelConfig.llama2c(64, 192, 2, 4, 2, 288, 256, false);
        Path file = dir.resolve("q4.gguf");
        GgufConvert.write(new RandomWeights(config, 5, "t"), GgufModelTest.tokenizer(config.vocabSize()), file,
                GgmlType.Q4_0, "t");
        InferenceEngine cold = engines.track(InferenceEngine.load(file, null, options().withPrefixCachePages(0)));
        InferenceEngine warm = engines.track(InferenceEngine.load(file, null, options()));
        exactness(cold, warm, config.vocabSize());
    }

    private static void exactness(InferenceEngine cold, InferenceEngine warm, int vocab) {
        int[] system = TestData.tokens(70, 3, vocab);
        int[] first = concat(system, TestData.tokens(21, 4, vocab));
        int[] second = concat(system, TestData.tokens(35, 5, vocab));
        for (SamplingParams sampling : List.of(SamplingParams.greedy(), new SamplingParams(0.9f, 0.95f, 1234))) {
            Output coldFirst = run(cold, first, sampling, 7, false);
            Output firstRun = run(warm, first, sampling, 7, true);
            Output again = run(warm, first, sampling, 9, true);
            Output shared = run(warm, second, sampling, 5, true);
            Output coldSecond = run(cold, second, sampling, 13, false);

            assertSame(coldFirst, firstRun, sampling + " first run");
            assertSame(coldFirst, again, sampling + " the same prompt again");
            assertSame(coldSecond, shared, sampling + " a prompt sharing the system prompt");
            assertThat(again.cachedTokens()).as("all complete pages but the one holding the last token")
                    .isEqualTo((first.length - 1) / PAGE * PAGE);
            assertThat(shared.cachedTokens()).as("the system prompt's complete pages").isEqualTo(64);
            warm.clearPrefixCache();
        }
        assertThat(warm.prefixCacheStats().hitTokens()).isEqualTo(2 * (80 + 64));
    }

    @Test
    void aPromptOfWholePagesStillComputesItsLastToken() {
        InferenceEngine warm = engines.create(Preset.TINY, 11, options());
        InferenceEngine cold = engines.create(Preset.TINY, 11, options().withPrefixCachePages(0));
        int[] prompt = TestData.tokens(3 * PAGE, 8, 259);
        run(warm, prompt, SamplingParams.greedy(), 16, true);
        Output again = run(warm, prompt, SamplingParams.greedy(), 16, true);
        assertThat(again.cachedTokens()).as("two pages; the third holds the last token").isEqualTo(2 * PAGE);
        assertSame(run(cold, prompt, SamplingParams.greedy(), 16, false), again, "whole pages");
    }

    @Test
    void aKeyCollisionNeverServesAnotherPromptsKv() {
        InferenceEngine warm = engines.create(Preset.TINY, 11, options());
        InferenceEngine cold = engines.create(Preset.TINY, 11, options().withPrefixCachePages(0));
        int[] a = TestData.tokens(50, 1, 259);
        int[] b = TestData.tokens(50, 2, 259);
        Sequence seq = warm.newSequence(SamplingParams.greedy());
        warm.reusePrefix(seq, a, keys(a));
        TestData.prefill(warm, seq, a, 50);
        warm.free(seq);
        // b filed under a's keys: every key "collides", the token comparison refuses each page.
        Sequence other = warm.newSequence(SamplingParams.greedy());
        assertThat(warm.reusePrefix(other, b, keys(a))).isZero();
        TestData.prefill(warm, other, b, 50);
        warm.sample(other);
        float[] logits = warm.logits(other);
        warm.free(other);
        Sequence reference = cold.newSequence(SamplingParams.greedy());
        TestData.prefill(cold, reference, b, 50);
        assertThat(logits).containsExactly(cold.logits(reference));
        cold.free(reference);
    }

    /** Where a cancel lands. */
    enum Cancel { BEFORE_ADMISSION, BEFORE_FIRST_CHUNK, INSIDE_A_LAYER, AT_A_LAYER_BOUNDARY, BETWEEN_CHUNKS,
        DURING_TRANSFER }

    /**
     * Many seeds: prompts sharing a system prompt, cancelled at a random point of a random kind, on a pool small
     * enough that pages are evicted; after each cancel the same prompt, served from whatever the cache holds,
     * equals a cold run bit for bit.
     */
    @Test
    void noCancelPoisonsTheCache() {
        InferenceEngine warm = engines.create(FOUR_LAYERS, 7, options().withKvPages(40).withThreads(1));
        InferenceEngine cold = engines.create(FOUR_LAYERS, 7, options().withPrefixCachePages(0).withThreads(1));
        int[] system = TestData.tokens(40, 99, 259);
        SplittableRandom random = new SplittableRandom(2026);
        int[] kinds = new int[Cancel.values().length];
        for (int iteration = 0; iteration < 60; iteration++) {
            int[] prompt = concat(random.nextBoolean() ? system : new int[0],
                    TestData.tokens(20 + random.nextInt(80), random.nextLong(), 259));
            int chunk = 5 + random.nextInt(30);
            Cancel kind = Cancel.values()[random.nextInt(Cancel.values().length)];
            kinds[kind.ordinal()]++;
            cancelled(warm, prompt, chunk, kind, random);
            SamplingParams sampling = random.nextBoolean() ? SamplingParams.greedy()
                    : new SamplingParams(1.0f, 0.9f, random.nextLong());
            int retryChunk = 5 + random.nextInt(30);
            assertSame(run(cold, prompt, sampling, retryChunk, false), run(warm, prompt, sampling, retryChunk, true),
                    "iteration " + iteration + " after a cancel " + kind);
        }
        assertThat(kinds).as("every kind of cancel was drawn").doesNotContain(0);
        assertThat(warm.prefixCacheStats().hitTokens()).as("the cache served something").isPositive();
        assertThat(warm.prefixCacheStats().evictions()).as("the pool was small enough to evict").isPositive();
    }

    /** Prefills {@code prompt} from the cache until a cancel of {@code kind} stops it, then frees it. */
    private static void cancelled(InferenceEngine engine, int[] prompt, int chunk, Cancel kind,
                                  SplittableRandom random) {
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        try {
            if (kind == Cancel.BEFORE_ADMISSION) {
                return;
            }
            engine.reusePrefix(seq, prompt, keys(prompt));
            int chunks = (prompt.length - seq.length() + chunk - 1) / chunk;
            int stopChunk = random.nextInt(chunks);
            int stopLayer = random.nextInt(FOUR_LAYERS.layers());
            int stopItem = random.nextInt(3);
            for (int c = 0; seq.length() < prompt.length; c++) {
                int from = seq.length();
                int to = Math.min(prompt.length, from + chunk);
                if (kind == Cancel.BETWEEN_CHUNKS && c == stopChunk) {
                    return;
                }
                if (kind == Cancel.BEFORE_FIRST_CHUNK) {
                    seq.requestStop();
                }
                if (c == stopChunk && (kind == Cancel.INSIDE_A_LAYER || kind == Cancel.AT_A_LAYER_BOUNDARY)) {
                    AtomicInteger items = new AtomicInteger();
                    engine.onLayerBoundary(new InferenceEngine.LayerBoundaryListener() {
                        @Override
                        public void beforeLayer(int layer) {
                            if (kind == Cancel.AT_A_LAYER_BOUNDARY && layer == stopLayer) {
                                seq.requestStop();
                            }
                        }

                        @Override
                        public void insideLayer(int layer) {
                            if (kind == Cancel.INSIDE_A_LAYER && layer == stopLayer
                                    && items.getAndIncrement() == stopItem) {
                                seq.requestStop();
                            }
                        }
                    });
                }
                try {
                    ComputeStoppedException stopped = catchThrowableOfType(ComputeStoppedException.class,
                            () -> engine.prefill(seq, prompt, from, to));
                    if (stopped != null) {
                        assertThat(seq.length()).as("a stopped chunk counts nothing").isEqualTo(from);
                        return;
                    }
                } finally {
                    engine.onLayerBoundary(null);
                }
            }
            // DURING_TRANSFER (or a stop that came too late): every chunk computed, the request ends before decode.
        } finally {
            engine.free(seq);
        }
    }

    /**
     * A prefill cancelled inside its fourth chunk keeps the pages its three completed chunks filled; every other
     * page is free at once; the retry resumes from the last complete page and computes only the rest.
     */
    @Test
    void aCancelledPrefillKeepsItsCompletePagesAndARetryResumesFromTheLast() {
        InferenceEngine warm = engines.create(FOUR_LAYERS, 7, options().withThreads(1));
        InferenceEngine cold = engines.create(FOUR_LAYERS, 7, options().withPrefixCachePages(0).withThreads(1));
        int[] prompt = TestData.tokens(200, 77, 259);
        int chunk = 40;
        Sequence seq = warm.newSequence(SamplingParams.greedy());
        warm.reusePrefix(seq, prompt, keys(prompt));
        for (int from = 0; from < 120; from += chunk) {
            warm.prefill(seq, prompt, from, from + chunk);
        }
        assertThat(seq.length()).isEqualTo(120);
        warm.onLayerBoundary(new InferenceEngine.LayerBoundaryListener() {
            @Override
            public void beforeLayer(int layer) {
            }

            @Override
            public void insideLayer(int layer) {
                if (layer == 2) {
                    seq.requestStop();
                }
            }
        });
        try {
            assertThat(catchThrowableOfType(ComputeStoppedException.class,
                    () -> warm.prefill(seq, prompt, 120, 120 + chunk)).inside()).isTrue();
        } finally {
            warm.onLayerBoundary(null);
        }
        int held = seq.pageCount();
        assertThat(held).as("pages for 160 tokens").isEqualTo(10);
        warm.free(seq);
        assertThat(warm.pagePool().pagesLive()).isZero();
        assertThat(warm.pagePool().pagesEvictable()).as("the 7 pages the completed chunks filled (112 tokens)")
                .isEqualTo(7);
        assertThat(warm.pagePool().pagesFree()).as("the rest are free at once")
                .isEqualTo(warm.pagePool().pageCount() - 7);

        long computedBefore = warm.stats().prefillTokens();
        Output retry = run(warm, prompt, SamplingParams.greedy(), chunk, true);
        assertThat(retry.cachedTokens()).isEqualTo(112);
        assertThat(warm.stats().prefillTokens() - computedBefore).as("tokens the retry recomputed")
                .isEqualTo(200 - 112);
        assertSame(run(cold, prompt, SamplingParams.greedy(), chunk, false), retry, "the retry");
    }

    /**
     * Two requests with the same new prefix at once each compute privately: the first to complete a page caches
     * it, the other's copy stays its own and is freed with it; both serve a cold run's output, and the prefix
     * stays one chain that a third request hits.
     */
    @Test
    void twoRequestsWithTheSameNewPrefixComputePrivatelyAndShareAfterwards() {
        InferenceEngine warm = engines.create(Preset.TINY, 11, options());
        InferenceEngine cold = engines.create(Preset.TINY, 11, options().withPrefixCachePages(0));
        int[] prompt = TestData.tokens(90, 21, 259);
        Sequence a = warm.newSequence(SamplingParams.greedy());
        Sequence b = warm.newSequence(SamplingParams.greedy());
        assertThat(warm.reusePrefix(a, prompt, keys(prompt))).isZero();
        assertThat(warm.reusePrefix(b, prompt, keys(prompt))).isZero();
        List<float[]> logits = new ArrayList<>();
        for (int from = 0; from < prompt.length; from += 20) {
            warm.prefill(a, prompt, from, Math.min(prompt.length, from + 20));
            warm.prefill(b, prompt, from, Math.min(prompt.length, from + 20));
        }
        logits.add(warm.logits(a));
        logits.add(warm.logits(b));
        assertThat(warm.pagePool().pagesCached()).as("one chain of five pages").isEqualTo(5);
        warm.free(a);
        warm.free(b);
        assertThat(warm.pagePool().pagesEvictable()).isEqualTo(5);
        Sequence reference = cold.newSequence(SamplingParams.greedy());
        TestData.prefill(cold, reference, prompt, 90);
        float[] expected = cold.logits(reference);
        cold.free(reference);
        for (float[] l : logits) {
            assertThat(l).containsExactly(expected);
        }
        assertThat(run(warm, prompt, SamplingParams.greedy(), 30, true).cachedTokens()).isEqualTo(80);
    }

    @Test
    void clearingTheCacheFreesWhatNoRequestHoldsAndTellsTheListener() {
        InferenceEngine warm = engines.create(Preset.TINY, 11, options());
        List<String> told = new ArrayList<>();
        warm.onPrefixCacheChange(new PrefixCacheListener() {
            @Override
            public void stored(long[] keys) {
                told.add("stored " + keys.length);
            }

            @Override
            public void removed(long[] keys) {
                told.add("removed " + keys.length);
            }

            @Override
            public void cleared() {
                told.add("cleared");
            }
        });
        int[] prompt = TestData.tokens(50, 3, 259);
        run(warm, prompt, SamplingParams.greedy(), 50, true);
        assertThat(warm.pagePool().pagesEvictable()).isEqualTo(3);
        assertThat(warm.clearPrefixCache()).isEqualTo(3);
        assertThat(warm.pagePool().pagesEvictable()).isZero();
        assertThat(warm.pagePool().pagesFree()).isEqualTo(warm.pagePool().pageCount());
        assertThat(told).containsExactly("stored 3", "cleared");
    }

    static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
