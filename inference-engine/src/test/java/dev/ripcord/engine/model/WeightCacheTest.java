package dev.ripcord.engine.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import dev.ripcord.engine.Engines;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.engine.gguf.GgufModelTest;
import dev.ripcord.engine.tools.GgufConvert;
import dev.ripcord.engine.weights.Llama2cCheckpoint;
import dev.ripcord.engine.weights.RandomWeights;
import dev.ripcord.format.gguf.GgmlType;

class WeightCacheTest {
    @RegisterExtension
    static final Engines engines = new Engines();

    @TempDir
    Path dir;

    private Path checkpoint(long seed) throws IOException {
        Path file = dir.resolve("model.bin");
        Llama2cCheckpoint.write(file, new RandomWeights(Preset.TINY.config(), seed, "tiny"));
        return file;
    }

    private static float[] logits(InferenceEngine engine) {
        int[] prompt = {1, 200, 17, 42, 250, 9, 77};
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        try {
            engine.prefill(seq, prompt, 0, prompt.length);
            return engine.logits(seq).clone();
        } finally {
            engine.free(seq);
        }
    }

    private List<Path> images(Path cache) throws IOException {
        try (Stream<Path> files = Files.list(cache)) {
            return files.filter(f -> f.toString().endsWith(".weights")).toList();
        }
    }

    @Test
    void theFirstEngineWritesTheImageAndTheNextMapsItWithBitIdenticalLogits() throws IOException {
        Path model = checkpoint(3);
        Path cache = dir.resolve("cache");
        InferenceEngine alone = engines.load(model, null, Engines.options());
        InferenceEngine first = engines.load(model, null, Engines.options().withWeightCache(cache));
        InferenceEngine second = engines.load(model, null, Engines.options().withWeightCache(cache));

        assertThat(alone.weightsOrigin()).isEqualTo(WeightCache.Origin.PRIVATE);
        assertThat(first.weightsOrigin()).isEqualTo(WeightCache.Origin.BUILT);
        assertThat(second.weightsOrigin()).isEqualTo(WeightCache.Origin.MAPPED);
        assertThat(images(cache)).hasSize(1);
        assertThat(second.weightsDescription()).contains("mapped from", images(cache).getFirst().toString());
        float[] expected = logits(alone);
        assertThat(logits(first)).containsExactly(expected);
        assertThat(logits(second)).containsExactly(expected);
    }

    @Test
    void aGgufModelsWidenedMatricesComeFromTheImageAndItsBlockQuantizedOnesStayInTheFile() throws IOException {
        ModelConfig config = ModelConfig.llama2c(64, 192, 2, 4, 2, 288, 128, false);
        for (GgmlType type : List.of(GgmlType.F16, GgmlType.Q8_0)) {
            Path model = dir.resolve(type + ".gguf");
            GgufConvert.write(new RandomWeights(config, 5, "t"), GgufModelTest.tokenizer(config.vocabSize()), model,
                    type, "t");
            Path cache = dir.resolve("cache-" + type);
            InferenceEngine alone = engines.load(model, null, Engines.options());
            InferenceEngine first = engines.load(model, null, Engines.options().withWeightCache(cache));
            InferenceEngine second = engines.load(model, null, Engines.options().withWeightCache(cache));

            assertThat(first.weightsOrigin()).isEqualTo(WeightCache.Origin.BUILT);
            assertThat(second.weightsOrigin()).isEqualTo(WeightCache.Origin.MAPPED);
            long image = Files.size(images(cache).getFirst()) - WeightCache.HEADER_BYTES;
            int dim = config.dim();
            int kvDim = config.kvDim();
            long norms = (2L * config.layers() + 1) * dim * Float.BYTES;
            long matrices = (config.layers() * (2L * dim * dim + 2L * kvDim * dim + 3L * dim * config.hiddenDim())
                    + 2L * config.vocabSize() * dim) * Float.BYTES;
            assertThat(image).as("%s: an image holds the norms, and the matrices only when they are widened", type)
                    .isEqualTo(type == GgmlType.F16 ? norms + matrices : norms);
            if (type == GgmlType.Q8_0) {
                long blocks = matrices / Float.BYTES / 32;
                assertThat(second.weightsDescription()).as("the start-up line says what stays in the file")
                        .contains(String.format(java.util.Locale.ROOT,
                                "quantized matrices %.1f MB used in place from the model file's read-only mapping",
                                blocks * 34 / 1e6));
            } else {
                assertThat(second.weightsDescription()).doesNotContain("quantized matrices");
            }
            float[] expected = logits(alone);
            assertThat(logits(first)).containsExactly(expected);
            assertThat(logits(second)).containsExactly(expected);
        }
    }

    @Test
    void anImageHoldsExactlyTheBytesTheSizingPassCounts() throws IOException {
        Path model = checkpoint(4);
        Path cache = dir.resolve("cache");
        try (Llama2cCheckpoint source = Llama2cCheckpoint.open(model); Arena arena = Arena.ofConfined()) {
            WeightCache.Loaded loaded = new WeightCache(cache).load(source, 32, arena);
            assertThat(loaded.origin()).isEqualTo(WeightCache.Origin.BUILT);
            assertThat(Files.size(loaded.image())).isEqualTo(WeightCache.HEADER_BYTES + loaded.bytes());
            assertThat(loaded.bytes()).isEqualTo(WeightCache.size(source, 32));
            // mapped, but seen as a native segment (the class of the engine's other segments), and read-only
            MemorySegment wq = ((PackedMatrix) loaded.weights().wq[0]).data();
            assertThat(wq.isMapped()).isFalse();
            assertThat(wq.isReadOnly()).isTrue();
            assertThat(wq.scope()).isEqualTo(arena.scope());
        }
    }

    @Test
    void aChangedModelFileGetsANewImageAndItsOldImageIsRemoved() throws IOException {
        Path model = checkpoint(3);
        Path cache = dir.resolve("cache");
        InferenceEngine before = engines.load(model, null, Engines.options().withWeightCache(cache));
        Path oldImage = images(cache).getFirst();

        checkpoint(5); // the same path, other weights
        Files.setLastModifiedTime(model, FileTime.fromMillis(Files.getLastModifiedTime(model).toMillis() + 2000));
        InferenceEngine after = engines.load(model, null, Engines.options().withWeightCache(cache));
        InferenceEngine alone = engines.load(model, null, Engines.options());

        assertThat(after.weightsOrigin()).isEqualTo(WeightCache.Origin.BUILT);
        assertThat(images(cache)).hasSize(1).doesNotContain(oldImage);
        assertThat(logits(after)).containsExactly(logits(alone));
        assertThat(logits(before)).isNotEqualTo(logits(after)); // still mapped: its pages outlive the file's name
    }

    @Test
    void aTruncatedImageIsRebuiltNotMapped() throws IOException {
        Path model = checkpoint(3);
        Path cache = dir.resolve("cache");
        engines.load(model, null, Engines.options().withWeightCache(cache));
        Path image = images(cache).getFirst();
        long size = Files.size(image);
        try (var channel = java.nio.channels.FileChannel.open(image, java.nio.file.StandardOpenOption.WRITE)) {
            channel.truncate(size / 2);
        }

        InferenceEngine engine = engines.load(model, null, Engines.options().withWeightCache(cache));

        assertThat(engine.weightsOrigin()).isEqualTo(WeightCache.Origin.BUILT);
        assertThat(Files.size(image)).isEqualTo(size);
        assertThat(logits(engine)).containsExactly(logits(engines.load(model, null, Engines.options())));
    }

    @Test
    void aCacheDirectoryThatCannotBeUsedFallsBackToPrivateWeightsAndSaysWhy() throws IOException {
        Path model = checkpoint(3);
        Path notADirectory = Files.writeString(dir.resolve("occupied"), "a file, not a directory");

        InferenceEngine engine = engines.load(model, null, Engines.options().withWeightCache(notADirectory));

        assertThat(engine.weightsOrigin()).isEqualTo(WeightCache.Origin.PRIVATE);
        assertThat(engine.weightsDescription()).contains("in process memory", "weight cache not used");
        assertThat(logits(engine)).containsExactly(logits(engines.load(model, null, Engines.options())));
    }

    @Test
    void enginesStartingTogetherBuildTheImageOnce() throws Exception {
        Path model = checkpoint(3);
        Path cache = dir.resolve("cache");
        List<Callable<InferenceEngine>> loads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            loads.add(() -> engines.load(model, null, Engines.options().withWeightCache(cache)));
        }
        List<WeightCache.Origin> origins = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
            for (Future<InferenceEngine> f : pool.invokeAll(loads)) {
                origins.add(f.get().weightsOrigin());
            }
        }

        assertThat(origins).containsOnlyOnce(WeightCache.Origin.BUILT)
                .containsOnly(WeightCache.Origin.BUILT, WeightCache.Origin.MAPPED);
        assertThat(images(cache)).hasSize(1);
        try (Stream<Path> files = Files.list(cache)) {
            assertThat(files.filter(f -> f.toString().endsWith(".tmp"))).isEmpty();
        }
    }
}
