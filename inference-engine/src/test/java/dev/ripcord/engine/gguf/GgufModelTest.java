package dev.ripcord.engine.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.ripcord.tokenizer.BpeTokenizer;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.InvalidModelFileException;
import dev.ripcord.engine.KernelMode;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.NativeIsa;
import dev.ripcord.engine.QuantizedDot;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.engine.kernel.NativeKernels;
import dev.ripcord.engine.model.Transformer;
import dev.ripcord.engine.tools.GgufConvert;
import dev.ripcord.engine.weights.RandomWeights;
import dev.ripcord.engine.weights.Tensor;
import dev.ripcord.engine.weights.WeightSource;
import dev.ripcord.format.gguf.GgmlType;
import dev.ripcord.format.gguf.GgufFile;
import dev.ripcord.format.gguf.GgufValueType;
import dev.ripcord.format.gguf.GgufWriter;

/**
 * GGUF loading on small random models (no download needed): an F32 GGUF computes exactly what its weights compute
 * in memory; a qwen2 file (Hugging Face rotary halves, biases) computes the same as the llama file it was permuted
 * from; quantized models keep the engine's batch and chunking invariance; unsupported architectures, tensor types
 * and missing tensors are errors that name them.
 */
public class GgufModelTest {
    /** Grouped-query attention, dimensions that are whole Q8_0/Q4_0 blocks. */
    static final ModelConfig TIED = ModelConfig.llama2c(64, 192, 2, 4, 2, 288, 128, true);
    static final ModelConfig UNTIED = ModelConfig.llama2c(64, 192, 2, 4, 2, 288, 128, false);

    @TempDir
    Path dir;

    static EngineOptions options() {
        return EngineOptions.defaults().withThreads(2).withKvPages(16).withMaxChunkTokens(5);
    }

    /**
     * {@code <unk> <s> </s> <0x00>..<0xFF>} then letters and a few words, as a SentencePiece vocabulary (also what
     * other packages' tests write into the GGUF files they make).
     */
    public static BpeTokenizer tokenizer(int vocab) {
        byte[][] pieces = new byte[vocab][];
        float[] scores = new float[vocab];
        pieces[0] = "<unk>".getBytes();
        pieces[1] = "<s>".getBytes();
        pieces[2] = "</s>".getBytes();
        for (int b = 0; b < 256; b++) {
            pieces[3 + b] = String.format("<0x%02X>", b).getBytes();
        }
        for (int i = 259; i < vocab; i++) {
            pieces[i] = (i - 259 < 26 ? String.valueOf((char) ('a' + i - 259)) : " w" + i).getBytes();
            scores[i] = -i;
        }
        return BpeTokenizer.of(pieces, scores);
    }

    static float[] logitsAfter(InferenceEngine e, int[] prompt, int[] forced) {
        Sequence s = e.newSequence(SamplingParams.greedy());
        try {
            for (int from = 0; from < prompt.length; from += 5) {
                e.prefill(s, prompt, from, Math.min(prompt.length, from + 5));
            }
            for (int t : forced) {
                e.setNextToken(s, t);
                e.decodeStep(List.of(s));
            }
            return e.logits(s);
        } finally {
            e.free(s);
        }
    }

    static final int[] PROMPT = {1, 300 % 288, 17, 260, 270, 45, 200, 3, 99, 280, 261, 5};
    static final int[] FORCED = {7, 280, 33};

    @Test
    void anF32GgufComputesExactlyWhatItsWeightsComputeInMemory() throws IOException {
        for (ModelConfig c : List.of(TIED, UNTIED)) {
            Path file = dir.resolve("m.gguf");
            GgufConvert.write(new RandomWeights(c, 42, "t"), tokenizer(c.vocabSize()), file, GgmlType.F32, "t");
            try (InferenceEngine reference = InferenceEngine.create(c, 42, options());
                 InferenceEngine gguf = InferenceEngine.load(file, null, options())) {
                assertThat(gguf.config()).isEqualTo(c);
                assertThat(logitsAfter(gguf, PROMPT, FORCED)).containsExactly(logitsAfter(reference, PROMPT, FORCED));
            }
        }
    }

    /**
     * For every {@link QuantizedDot} mode, on the native decode kernels (the default, where the build has them) and
     * on the Vector API's: chunking and batching change no bit. Prefilling
     * a token equals decoding it exactly when both take the same kernels ({@code never}, {@code always}); with the
     * default ({@code decode}: table or integer kernels for decode steps, the GEMM over transposed input panels for
     * prefill) they differ by the order of the float sums and, on the integer kernels, the rounding of the
     * activations to 8 bits, bounded here at 2 % of the largest logit.
     */
    @Test
    void quantizedModelsGiveTheSameLogitsForAnyChunkingAndBatch() throws IOException {
        for (KernelMode kernels : List.of(KernelMode.NATIVE, KernelMode.VECTOR)) {
            for (QuantizedDot mode : QuantizedDot.values()) {
                if (kernels == KernelMode.NATIVE && mode == QuantizedDot.NEVER) {
                    continue; // floats only: no native kernel runs, the VECTOR round covers it
                }
                quantizedModelsGiveTheSameLogitsForAnyChunkingAndBatch(options().withKernels(kernels)
                        .withQuantizedDot(mode), mode);
            }
        }
    }

    private void quantizedModelsGiveTheSameLogitsForAnyChunkingAndBatch(EngineOptions options, QuantizedDot mode)
            throws IOException {
        for (GgmlType t : List.of(GgmlType.Q8_0, GgmlType.Q4_0)) {
            Path file = dir.resolve("q.gguf");
            GgufConvert.write(new RandomWeights(UNTIED, 5, "t"), tokenizer(UNTIED.vocabSize()), file, t, "t");
            try (InferenceEngine e = InferenceEngine.load(file, null, options);
                 InferenceEngine whole = InferenceEngine.load(file, null, options.withMaxChunkTokens(64));
                 InferenceEngine f32 = InferenceEngine.create(UNTIED, 5, options)) {
                float[] chunked = logitsAfter(e, PROMPT, FORCED);
                // the same positions as one prefill chunk (no decode steps)
                int[] all = java.util.Arrays.copyOf(PROMPT, PROMPT.length + FORCED.length);
                System.arraycopy(FORCED, 0, all, PROMPT.length, FORCED.length);
                Sequence s = whole.newSequence(SamplingParams.greedy());
                whole.prefill(s, all, 0, all.length);
                float[] oneChunk = whole.logits(s);
                whole.free(s);
                if (mode == QuantizedDot.DECODE) {
                    double largest = 0;
                    double diff = 0;
                    for (int i = 0; i < oneChunk.length; i++) {
                        largest = Math.max(largest, Math.abs(oneChunk[i]));
                        diff = Math.max(diff, Math.abs(oneChunk[i] - chunked[i]));
                    }
                    System.out.printf("%s %s: prefill vs decode, max |logit diff| %.4f (logits up to %.2f)%n",
                            t, e.kernelName(), diff, largest);
                    assertThat(diff).as("%s one chunk vs chunks + decode", t).isLessThan(0.02 * largest);
                } else {
                    assertThat(oneChunk).as("%s %s: one chunk vs chunks + decode", t, mode).containsExactly(chunked);
                }

                // a decode batch of two sequences equals each alone
                Sequence a = e.newSequence(SamplingParams.greedy());
                Sequence b = e.newSequence(SamplingParams.greedy());
                e.prefill(a, PROMPT, 0, 5);
                e.prefill(b, PROMPT, 0, 3);
                e.setNextToken(a, 9);
                e.setNextToken(b, 10);
                e.decodeStep(List.of(a, b));
                float[] batched = e.logits(b);
                float[] batchedA = e.logits(a);
                e.free(a);
                e.free(b);
                // with a stopped sequence between them, the output head computes their rows in runs around its row:
                // the same bits
                Sequence a2 = e.newSequence(SamplingParams.greedy());
                Sequence gone = e.newSequence(SamplingParams.greedy());
                Sequence b2 = e.newSequence(SamplingParams.greedy());
                e.prefill(a2, PROMPT, 0, 5);
                e.prefill(gone, PROMPT, 0, 4);
                e.prefill(b2, PROMPT, 0, 3);
                e.setNextToken(a2, 9);
                e.setNextToken(gone, 11);
                e.setNextToken(b2, 10);
                gone.requestStop();
                assertThat(e.decodeStep(List.of(a2, gone, b2))[1]).isEqualTo(InferenceEngine.STOPPED);
                assertThat(e.logits(a2)).as("%s %s: around a stopped row", t, mode).containsExactly(batchedA);
                assertThat(e.logits(b2)).as("%s %s: around a stopped row", t, mode).containsExactly(batched);
                List.of(a2, gone, b2).forEach(e::free);
                Sequence alone = e.newSequence(SamplingParams.greedy());
                e.prefill(alone, PROMPT, 0, 3);
                e.setNextToken(alone, 10);
                e.decodeStep(List.of(alone));
                assertThat(e.logits(alone)).as("%s %s: batched vs alone", t, mode).containsExactly(batched);
                e.free(alone);

                // and the quantized logits stay near the F32 ones
                float[] exact = logitsAfter(f32, PROMPT, FORCED);
                double max = 0;
                for (int i = 0; i < exact.length; i++) {
                    max = Math.max(max, Math.abs(exact[i] - chunked[i]));
                }
                System.out.printf("%s: max |logit diff| vs F32 %.4f%n", t, max);
                assertThat(max).as("%s max |logit diff| vs F32", t).isLessThan(t == GgmlType.Q8_0 ? 0.2 : 2.0);
            }
        }
    }

    /**
     * Every native variant this CPU runs serves the same logits, bit for bit (the native definition has no vector
     * width in it), and an engine that asked for native kernels says it runs them; where the build has none, the
     * engine runs the Vector API kernels and a forced variant is refused.
     */
    @Test
    void everyNativeVariantServesTheSameLogits() throws IOException {
        if (NativeKernels.available()) {
            everyNativeVariantGivesTheSameLogits();
        } else {
            try (InferenceEngine e = InferenceEngine.create(UNTIED, 5, options())) {
                assertThat(e.kernelName()).startsWith("vector-");
            }
            assertThatThrownBy(() -> InferenceEngine.create(UNTIED, 5, options().withNativeIsa(NativeIsa.GENERIC)))
                    .isInstanceOf(IllegalStateException.class);
        }
    }

    private void everyNativeVariantGivesTheSameLogits() throws IOException {
        for (GgmlType t : List.of(GgmlType.Q8_0, GgmlType.Q4_0)) {
            Path file = dir.resolve("n.gguf");
            GgufConvert.write(new RandomWeights(UNTIED, 5, "t"), tokenizer(UNTIED.vocabSize()), file, t, "t");
            float[] expected = null;
            for (NativeKernels.Isa isa : NativeKernels.supported()) {
                try (InferenceEngine e = InferenceEngine.load(file, null,
                        options().withNativeIsa(NativeIsa.valueOf(isa.name())))) {
                    assertThat(e.kernelName()).startsWith("native-" + isa.label() + "+vector-");
                    assertThat(e.numerics()).contains("int8=native");
                    float[] logits = logitsAfter(e, PROMPT, FORCED);
                    if (expected == null) {
                        expected = logits;
                    } else {
                        assertThat(logits).as("%s on %s", t, isa).containsExactly(expected);
                    }
                }
            }
        }
    }

    /**
     * Rows longer than {@code Transformer.PREFILL_WHOLE_ROW} (here the down projection's 2112 columns) go through
     * prefill in chunks of the row, the GEMM carrying each FMA chain across them: any prompt chunking, the vector
     * and the scalar kernels, still give the same bits, and the logits stay near the F32 model's.
     */
    @Test
    void prefillOverRowsLongerThanOneChunkKeepsEveryInvariance() throws IOException {
        ModelConfig c = ModelConfig.llama2c(64, 2112, 2, 4, 2, 288, 64, false);
        assertThat(c.hiddenDim()).isGreaterThan(Transformer.PREFILL_WHOLE_ROW);
        int[] all = java.util.Arrays.copyOf(PROMPT, PROMPT.length + FORCED.length);
        System.arraycopy(FORCED, 0, all, PROMPT.length, FORCED.length);
        for (GgmlType t : List.of(GgmlType.Q8_0, GgmlType.Q4_0)) {
            Path file = dir.resolve("long.gguf");
            GgufConvert.write(new RandomWeights(c, 9, "t"), tokenizer(c.vocabSize()), file, t, "t");
            try (InferenceEngine vector = InferenceEngine.load(file, null,
                    options().withMaxChunkTokens(64).withKernels(KernelMode.VECTOR));
                 InferenceEngine scalar = InferenceEngine.load(file, null,
                         options().withMaxChunkTokens(64).withKernels(KernelMode.SCALAR));
                 InferenceEngine f32 = InferenceEngine.create(c, 9, options().withMaxChunkTokens(64))) {
                float[] oneChunk = prefillLogits(vector, all, all.length);
                assertThat(prefillLogits(vector, all, 5)).as("%s chunks of 5 vs one chunk", t)
                        .containsExactly(oneChunk);
                assertThat(prefillLogits(scalar, all, 7)).as("%s scalar kernels", t).containsExactly(oneChunk);
                float[] exact = prefillLogits(f32, all, all.length);
                double max = 0;
                for (int i = 0; i < exact.length; i++) {
                    max = Math.max(max, Math.abs(exact[i] - oneChunk[i]));
                }
                assertThat(max).as("%s max |logit diff| vs F32", t).isLessThan(t == GgmlType.Q8_0 ? 0.2 : 2.0);
            }
        }
    }

    static float[] prefillLogits(InferenceEngine e, int[] tokens, int chunk) {
        Sequence s = e.newSequence(SamplingParams.greedy());
        try {
            for (int from = 0; from < tokens.length; from += chunk) {
                e.prefill(s, tokens, from, Math.min(tokens.length, from + chunk));
            }
            return e.logits(s);
        } finally {
            e.free(s);
        }
    }

    /** Writes {@code source} as a qwen2 GGUF: Q/K rows in HF halves order, zero Q/K/V biases. */
    static void writeQwen2(WeightSource source, Path out) throws IOException {
        ModelConfig c = source.config();
        GgufWriter w = new GgufWriter().putString("general.architecture", "qwen2")
                .putU32("qwen2.context_length", c.contextLength()).putU32("qwen2.embedding_length", c.dim())
                .putU32("qwen2.block_count", c.layers()).putU32("qwen2.feed_forward_length", c.hiddenDim())
                .putU32("qwen2.attention.head_count", c.heads()).putU32("qwen2.attention.head_count_kv", c.kvHeads())
                .putF32("qwen2.attention.layer_norm_rms_epsilon", c.normEps()).putF32("qwen2.rope.freq_base", c.ropeTheta())
                .putString("tokenizer.ggml.model", "llama");
        BpeTokenizer tok = tokenizer(c.vocabSize());
        List<String> pieces = new java.util.ArrayList<>();
        List<Float> scores = new java.util.ArrayList<>();
        for (int i = 0; i < c.vocabSize(); i++) {
            pieces.add(new String(tok.piece(i)).replace(' ', '\u2581'));
            scores.add(tok.score(i));
        }
        w.putArray("tokenizer.ggml.tokens", GgufValueType.STRING, pieces)
                .putArray("tokenizer.ggml.scores", GgufValueType.FLOAT32, scores);
        String[] names = {"token_embd.weight", "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight", "ffn_up.weight",
                "output_norm.weight"};
        Tensor[] tensors = {Tensor.TOKEN_EMBEDDING, Tensor.RMS_ATT, Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.WO,
                Tensor.RMS_FFN, Tensor.W1, Tensor.W2, Tensor.W3, Tensor.RMS_FINAL};
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < tensors.length; i++) {
                Tensor t = tensors[i];
                for (int l = 0; l < t.count(c); l++) {
                    int rows = t.rows(c);
                    int cols = t.cols(c);
                    MemorySegment buf = arena.allocate((long) rows * cols * 4);
                    source.read(t, l, buf);
                    float[] x = buf.toArray(ValueLayout.JAVA_FLOAT);
                    if (t == Tensor.WQ || t == Tensor.WK) {
                        x = toHalves(x, rows, cols, c.headSize());
                    }
                    String name = t.perLayer() ? "blk." + l + "." + names[i] : names[i];
                    w.addTensor(name, rows == 1 ? new long[] {cols} : new long[] {cols, rows}, x);
                    if (t == Tensor.WQ || t == Tensor.WK || t == Tensor.WV) {
                        w.addTensor(name.replace(".weight", ".bias"), new long[] {rows}, new float[rows]);
                    }
                }
            }
        }
        w.write(out);
    }

    /** Interleaved pairs (2i, 2i+1) to halves (i, i + hs/2): what HF checkpoints hold and qwen2 GGUF keeps. */
    static float[] toHalves(float[] x, int rows, int cols, int hs) {
        float[] out = new float[x.length];
        for (int r = 0; r < rows; r++) {
            int head = r / hs;
            int within = r % hs;
            int dst = head * hs + (within % 2 == 0 ? within / 2 : within / 2 + hs / 2);
            System.arraycopy(x, r * cols, out, dst * cols, cols);
        }
        return out;
    }

    @Test
    void aQwen2FileWithRotaryHalvesComputesWhatTheInterleavedLlamaWeightsCompute() throws IOException {
        Path file = dir.resolve("qwen2.gguf");
        writeQwen2(new RandomWeights(TIED, 9, "t"), file);
        try (InferenceEngine reference = InferenceEngine.create(TIED, 9, options());
             InferenceEngine qwen = InferenceEngine.load(file, null, options())) {
            assertThat(logitsAfter(qwen, PROMPT, FORCED)).containsExactly(logitsAfter(reference, PROMPT, FORCED));
        }
    }

    static GgufWriter minimalLlama(String arch, GgmlType qType) {
        ModelConfig c = ModelConfig.llama2c(32, 32, 1, 1, 1, 8, 16, true);
        GgufWriter w = new GgufWriter().putString("general.architecture", arch)
                .putU32(arch + ".context_length", 16).putU32(arch + ".embedding_length", 32)
                .putU32(arch + ".block_count", 1).putU32(arch + ".feed_forward_length", 32)
                .putU32(arch + ".attention.head_count", 1);
        w.addTensor("token_embd.weight", new long[] {32, 8}, new float[256]);
        w.addTensor("output_norm.weight", new long[] {32}, new float[32]);
        w.addTensor("blk.0.attn_norm.weight", new long[] {32}, new float[32]);
        w.addTensor("blk.0.ffn_norm.weight", new long[] {32}, new float[32]);
        for (String n : List.of("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_down", "ffn_up")) {
            w.addTensor("blk.0." + n + ".weight", new long[] {32, 32}, qType,
                    MemorySegment.ofArray(new byte[(int) qType.byteSize(32 * 32)]));
        }
        return w;
    }

    @Test
    void unsupportedArchitecturesTensorTypesAndMissingTensorsAreNamed() throws IOException {
        Path gemma = dir.resolve("gemma.gguf");
        minimalLlama("gemma", GgmlType.F32).write(gemma);
        assertThatThrownBy(() -> InferenceEngine.load(gemma, null, options()))
                .isInstanceOf(InvalidModelFileException.class)
                .hasMessageContaining("architecture 'gemma' is not supported (supported: llama, qwen2)");

        Path q5 = dir.resolve("q5_0.gguf");
        minimalLlama("llama", GgmlType.Q5_0).write(q5);
        assertThatThrownBy(() -> InferenceEngine.load(q5, null, options()))
                .isInstanceOf(InvalidModelFileException.class)
                .hasMessageContaining("tensor blk.0.attn_q.weight has type Q5_0, which this engine does not support");

        Path missing = dir.resolve("missing.gguf");
        new GgufWriter().putString("general.architecture", "llama").putU32("llama.context_length", 16)
                .putU32("llama.embedding_length", 32).putU32("llama.block_count", 1)
                .putU32("llama.feed_forward_length", 32).putU32("llama.attention.head_count", 1)
                .write(missing);
        assertThatThrownBy(() -> InferenceEngine.load(missing, null, options()))
                .isInstanceOf(InvalidModelFileException.class)
                .hasMessageContaining("missing tensor token_embd.weight");

        Path noTokenizer = dir.resolve("f32.gguf");
        minimalLlama("llama", GgmlType.F32).putString("tokenizer.ggml.model", "gpt2").write(noTokenizer);
        assertThatThrownBy(() -> InferenceEngine.load(noTokenizer, null, options()))
                .isInstanceOf(InvalidModelFileException.class)
                .hasMessageContaining(noTokenizer.toString())
                .hasMessageContaining("tokenizer: GGUF metadata lacks tokenizer.ggml.tokens");
    }

    @Test
    void aTruncatedGgufIsAnInvalidModelFileNamingTheOffset() throws IOException {
        Path file = dir.resolve("t.gguf");
        GgufConvert.write(new RandomWeights(TIED, 1, "t"), tokenizer(TIED.vocabSize()), file, GgmlType.Q8_0, "t");
        byte[] bytes = Files.readAllBytes(file);
        Files.write(file, java.util.Arrays.copyOf(bytes, bytes.length - 100));
        assertThat(GgufFile.isGguf(file)).isTrue();
        assertThatThrownBy(() -> InferenceEngine.load(file, null, options()))
                .isInstanceOf(InvalidModelFileException.class)
                .hasMessageContaining(file.toString())
                .hasMessageContaining("runs past the end of the file");
    }

    /**
     * A model whose matrices are random Q4_K / Q6_K super-blocks (no quantizer needed) against the same model
     * written as F32 with the values ggml's dequantizer gives: with the float path ({@code never}) the engine must compute the
     * same logits (up to summation order: the F32 path is the packed GEMM, the quantized one dot products); with
     * the integer kernels everywhere ({@code always}), the same up to the 8-bit quantization of the activations (5 % of the
     * largest logit; measured 0.08 % for Q4_K, 2.6 % for Q6_K, whose random int8 sub-block scales cancel).
     */
    @Test
    void kQuantMatricesComputeWhatTheirDequantizedValuesCompute() throws IOException {
        ModelConfig c = ModelConfig.llama2c(256, 512, 1, 4, 2, 288, 64, true);
        java.util.SplittableRandom r = new java.util.SplittableRandom(21);
        for (GgmlType t : List.of(GgmlType.Q4_K, GgmlType.Q6_K)) {
            GgufWriter quant = header(c);
            GgufWriter f32 = header(c);
            Tensor[] all = {Tensor.TOKEN_EMBEDDING, Tensor.RMS_ATT, Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.WO,
                    Tensor.RMS_FFN, Tensor.W1, Tensor.W2, Tensor.W3, Tensor.RMS_FINAL};
            String[] names = {"token_embd.weight", "attn_norm.weight", "attn_q.weight", "attn_k.weight",
                    "attn_v.weight", "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight",
                    "ffn_up.weight", "output_norm.weight"};
            for (int i = 0; i < all.length; i++) {
                Tensor tensor = all[i];
                String name = tensor.perLayer() ? "blk.0." + names[i] : names[i];
                int rows = tensor.rows(c);
                int cols = tensor.cols(c);
                if (rows == 1) {
                    float[] ones = new float[cols];
                    java.util.Arrays.fill(ones, 1f);
                    quant.addTensor(name, new long[] {cols}, ones);
                    f32.addTensor(name, new long[] {cols}, ones);
                    continue;
                }
                byte[] blocks = dev.ripcord.engine.kernel.QuantKernelTwinsTest.randomBlocks(r, t, rows * cols / 256);
                float[] values = new float[rows * cols];
                dev.ripcord.engine.kernel.Kernels.scalar(16).dequantize(t, MemorySegment.ofArray(blocks), 0,
                        rows * cols, MemorySegment.ofArray(values), 0);
                quant.addTensor(name, new long[] {cols, rows}, t, MemorySegment.ofArray(blocks));
                f32.addTensor(name, new long[] {cols, rows}, values);
            }
            Path qFile = dir.resolve("k.gguf");
            Path fFile = dir.resolve("f.gguf");
            quant.write(qFile);
            f32.write(fFile);
            for (QuantizedDot dot : List.of(QuantizedDot.NEVER, QuantizedDot.ALWAYS)) {
                try (InferenceEngine q = InferenceEngine.load(qFile, null, options().withQuantizedDot(dot));
                     InferenceEngine f = InferenceEngine.load(fFile, null, options().withQuantizedDot(dot))) {
                    float[] expected = logitsAfter(f, PROMPT, FORCED);
                    float[] actual = logitsAfter(q, PROMPT, FORCED);
                    double scale = 0;
                    double max = 0;
                    for (int i = 0; i < expected.length; i++) {
                        scale = Math.max(scale, Math.abs(expected[i]));
                        max = Math.max(max, Math.abs(expected[i] - actual[i]));
                    }
                    System.out.printf("%s, %s path: max |logit diff| %.4f (logits up to %.1f)%n", t, dot, max, scale);
                    assertThat(scale).as("%s logits are not trivially zero", t).isGreaterThan(1e-3);
                    assertThat(max).as("%s %s max |logit diff| (logits up to %.3f)", t, dot, scale)
                            .isLessThan((dot == QuantizedDot.ALWAYS ? 5e-2 : 1e-4) * Math.max(1, scale));
                }
            }
        }
    }

    static GgufWriter header(ModelConfig c) {
        GgufWriter w = new GgufWriter().putString("general.architecture", "llama")
                .putU32("llama.context_length", c.contextLength()).putU32("llama.embedding_length", c.dim())
                .putU32("llama.block_count", c.layers()).putU32("llama.feed_forward_length", c.hiddenDim())
                .putU32("llama.attention.head_count", c.heads()).putU32("llama.attention.head_count_kv", c.kvHeads())
                .putString("tokenizer.ggml.model", "llama");
        BpeTokenizer tok = tokenizer(c.vocabSize());
        List<String> pieces = new java.util.ArrayList<>();
        for (int i = 0; i < c.vocabSize(); i++) {
            pieces.add(new String(tok.piece(i)).replace(' ', '\u2581'));
        }
        return w.putArray("tokenizer.ggml.tokens", GgufValueType.STRING, pieces);
    }

    /** {@code source} as an F32 llama GGUF with extra metadata (and optionally a rope_freqs tensor). */
    static void writeLlama(WeightSource source, Path out, java.util.function.Consumer<GgufWriter> extra) throws IOException {
        writeLlama(source, out, extra, false);
    }

    /** With {@code bf16}, every matrix is stored BF16 ({@code truncated} to its upper 16 bits, exactly representable). */
    static void writeLlama(WeightSource source, Path out, java.util.function.Consumer<GgufWriter> extra, boolean bf16)
            throws IOException {
        ModelConfig c = source.config();
        GgufWriter w = header(c);
        extra.accept(w);
        String[] names = {"token_embd.weight", "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_down.weight", "ffn_up.weight",
                "output_norm.weight"};
        Tensor[] tensors = {Tensor.TOKEN_EMBEDDING, Tensor.RMS_ATT, Tensor.WQ, Tensor.WK, Tensor.WV, Tensor.WO,
                Tensor.RMS_FFN, Tensor.W1, Tensor.W2, Tensor.W3, Tensor.RMS_FINAL};
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < tensors.length; i++) {
                Tensor t = tensors[i];
                for (int l = 0; l < t.count(c); l++) {
                    int rows = t.rows(c);
                    int cols = t.cols(c);
                    MemorySegment buf = arena.allocate((long) rows * cols * 4);
                    source.read(t, l, buf);
                    String name = t.perLayer() ? "blk." + l + "." + names[i] : names[i];
                    float[] x = buf.toArray(ValueLayout.JAVA_FLOAT);
                    if (bf16 && rows > 1) {
                        byte[] b = new byte[x.length * 2];
                        for (int e = 0; e < x.length; e++) {
                            int bits = Float.floatToRawIntBits(x[e]) >>> 16;
                            b[2 * e] = (byte) bits;
                            b[2 * e + 1] = (byte) (bits >> 8);
                        }
                        w.addTensor(name, new long[] {cols, rows}, GgmlType.BF16, MemorySegment.ofArray(b));
                    } else {
                        w.addTensor(name, rows == 1 ? new long[] {cols} : new long[] {cols, rows}, x);
                    }
                }
            }
        }
        w.write(out);
    }

    @Test
    void linearRopeScalingAndRopeFreqsFactorsScaleTheSameFrequencies() throws IOException {
        RandomWeights source = new RandomWeights(TIED, 4, "t");
        Path plain = dir.resolve("plain.gguf");
        Path linear = dir.resolve("linear.gguf");
        Path factors = dir.resolve("factors.gguf");
        Path yarn = dir.resolve("yarn.gguf");
        writeLlama(source, plain, w -> { });
        writeLlama(source, linear, w -> w.putString("llama.rope.scaling.type", "linear").putF32("llama.rope.scaling.factor", 4f));
        float[] four = new float[TIED.headSize() / 2];
        java.util.Arrays.fill(four, 4f);
        writeLlama(source, factors, w -> w.addTensor("rope_freqs.weight", new long[] {four.length}, four));
        writeLlama(source, yarn, w -> w.putString("llama.rope.scaling.type", "yarn"));
        try (InferenceEngine p = InferenceEngine.load(plain, null, options());
             InferenceEngine l = InferenceEngine.load(linear, null, options());
             InferenceEngine f = InferenceEngine.load(factors, null, options());
             InferenceEngine reference = InferenceEngine.create(TIED, 4, options())) {
            float[] unscaled = logitsAfter(p, PROMPT, FORCED);
            assertThat(unscaled).containsExactly(logitsAfter(reference, PROMPT, FORCED));
            float[] byLinear = logitsAfter(l, PROMPT, FORCED);
            assertThat(byLinear).isNotEqualTo(unscaled);
            assertThat(logitsAfter(f, PROMPT, FORCED)).containsExactly(byLinear);
        }
        assertThatThrownBy(() -> InferenceEngine.load(yarn, null, options()))
                .isInstanceOf(InvalidModelFileException.class)
                .hasMessageContaining("llama.rope.scaling.type 'yarn' is not supported");
    }

    /** RandomWeights with every matrix element truncated to BF16 precision (so an F32 file can hold the same values). */
    static WeightSource truncatedToBf16(WeightSource s) {
        return new WeightSource() {
            @Override
            public ModelConfig config() {
                return s.config();
            }

            @Override
            public void read(Tensor t, int layer, MemorySegment dst) {
                s.read(t, layer, dst);
                if (t.rows(s.config()) > 1) {
                    for (long i = 0; i < t.size(s.config()); i++) {
                        int bits = dst.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i);
                        dst.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, bits & 0xFFFF0000);
                    }
                }
            }

            @Override
            public String describe() {
                return "bf16 " + s.describe();
            }
        };
    }

    @Test
    void aBf16FileComputesExactlyWhatTheSameValuesInF32Compute() throws IOException {
        WeightSource source = truncatedToBf16(new RandomWeights(TIED, 8, "t"));
        Path bf16 = dir.resolve("bf16.gguf");
        Path f32 = dir.resolve("f32.gguf");
        writeLlama(source, bf16, w -> { }, true);
        writeLlama(source, f32, w -> { }, false);
        try (InferenceEngine b = InferenceEngine.load(bf16, null, options());
             InferenceEngine f = InferenceEngine.load(f32, null, options())) {
            assertThat(logitsAfter(b, PROMPT, FORCED)).containsExactly(logitsAfter(f, PROMPT, FORCED));
        }
    }
}
