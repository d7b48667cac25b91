package dev.ripcord.engine.weights;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

import dev.ripcord.engine.InvalidModelFileException;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.kernel.Kernels;
import dev.ripcord.format.gguf.GgmlType;
import dev.ripcord.format.gguf.GgufFile;
import dev.ripcord.format.gguf.GgufFormatException;
import dev.ripcord.format.gguf.GgufTensorInfo;
import dev.ripcord.tokenizer.Tokenizer;
import dev.ripcord.tokenizer.Tokenizers;

/**
 * A GGUF model of the Llama family (architectures {@code llama} and {@code qwen2}) as a {@link WeightSource}.
 *
 * <p>Hyper-parameters come from the {@code <arch>.*} keys: {@code embedding_length}, {@code feed_forward_length},
 * {@code block_count}, {@code attention.head_count}, {@code attention.head_count_kv} (default: head_count),
 * {@code context_length}, {@code attention.layer_norm_rms_epsilon} (default 1e-5), {@code rope.freq_base}
 * (default 10000), {@code rope.scaling.type} ({@code none} or {@code linear} with {@code rope.scaling.factor}) and
 * the {@code rope_freqs.weight} tensor (Llama 3.1's per-frequency factors) when present; the vocabulary size is
 * {@code token_embd}'s row count. The classifier is {@code output.weight}, or the embedding when that is absent
 * (tied).
 *
 * <p>Rotary layout: GGUF {@code llama} tensors are in the interleaved-pair order that llama.cpp's {@code ROPE_NORM}
 * and llama2.c's {@code run.c} rotate (llama.cpp's HF converter permutes Q and K into it); {@code qwen2} tensors are
 * in Hugging Face's halves order ({@code ROPE_NEOX}: element {@code i} pairs with {@code i + headSize/2}). The
 * engine rotates interleaved pairs only, so for qwen2 the rows of Q and K (and their biases) are read in the
 * permuted order {@code 2i ← i, 2i+1 ← i + headSize/2} within each head: the scores {@code q·k} are unchanged
 * by a permutation applied to both, and V is not permuted.
 *
 * <p>Tensor types: Q8_0, Q4_0, Q4_K and Q6_K matrices are used in place from the mapping ({@link #stored});
 * F32, F16 and BF16 are widened to F32 when the engine {@link #read}s them. Any other type, a missing tensor or a
 * shape that does not match the hyper-parameters is an {@link InvalidModelFileException} naming it.
 *
 * <p>Ownership: this object owns the {@link GgufFile} (and its mapping). An engine built from it keeps views of
 * the mapping, so it must stay open as long as that engine: the engine takes it over and closes it.
 */
public final class GgufWeights implements WeightSource, AutoCloseable {
    /** Types the kernels compute with directly from the mapped file. */
    public static final Set<GgmlType> IN_PLACE = EnumSet.of(GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K);
    /** Types widened to F32 at load. */
    public static final Set<GgmlType> WIDENED = EnumSet.of(GgmlType.F32, GgmlType.F16, GgmlType.BF16);
    /** Architectures this engine runs. */
    public static final List<String> ARCHITECTURES = List.of("llama", "qwen2");

    private final GgufFile file;
    private final String arch;
    private final ModelConfig config;
    private final boolean neox;
    private final boolean biases;
    private final double[] ropeInverseFrequencies;

    private GgufWeights(GgufFile file) throws InvalidModelFileException {
        this.file = file;
        Path path = file.path();
        this.arch = string("general.architecture");
        if (!ARCHITECTURES.contains(arch)) {
            throw new InvalidModelFileException(path, "architecture '" + arch + "' is not supported (supported: "
                    + String.join(", ", ARCHITECTURES) + ")");
        }
        this.neox = arch.equals("qwen2");
        this.biases = arch.equals("qwen2");
        int dim = integer(arch + ".embedding_length");
        int hidden = integer(arch + ".feed_forward_length");
        int layers = integer(arch + ".block_count");
        int heads = integer(arch + ".attention.head_count");
        int kvHeads = file.has(arch + ".attention.head_count_kv") ? integer(arch + ".attention.head_count_kv") : heads;
        int context = integer(arch + ".context_length");
        float eps = file.findFloat(arch + ".attention.layer_norm_rms_epsilon").orElse(1e-5f);
        float theta = file.findFloat(arch + ".rope.freq_base").orElse(10000f);
        if (heads <= 0 || dim % heads != 0) {
            throw new InvalidModelFileException(path, "embedding_length " + dim + " is not a multiple of head_count " + heads);
        }
        int headSize = dim / heads;
        Optional<Long> keyLength = file.findLong(arch + ".attention.key_length");
        if (keyLength.isPresent() && keyLength.get() != headSize) {
            throw new InvalidModelFileException(path, arch + ".attention.key_length " + keyLength.get()
                    + " differs from embedding_length / head_count = " + headSize + "; not supported");
        }
        Optional<Long> ropeDims = file.findLong(arch + ".rope.dimension_count");
        if (ropeDims.isPresent() && ropeDims.get() != headSize) {
            throw new InvalidModelFileException(path, arch + ".rope.dimension_count " + ropeDims.get()
                    + " (partial rotary) is not supported: the head size is " + headSize);
        }
        GgufTensorInfo embd = tensorInfo("token_embd.weight");
        if (embd.rank() != 2 || embd.dim(0) != dim) {
            throw new InvalidModelFileException(path, "token_embd.weight has shape " + shape(embd)
                    + ", expected [" + dim + ", vocab]");
        }
        int vocab = Math.toIntExact(embd.dim(1));
        boolean tied = file.tensor("output.weight").isEmpty();
        try {
            this.config = new ModelConfig(dim, hidden, layers, heads, kvHeads, vocab, context, tied, theta, eps);
        } catch (IllegalArgumentException e) {
            throw new InvalidModelFileException(path, "hyper-parameters are inconsistent: " + e.getMessage());
        }
        this.ropeInverseFrequencies = ropeScaling(headSize, theta);
        for (Tensor t : Tensor.values()) {
            for (int l = 0; l < t.count(config); l++) {
                check(t, l);
            }
        }
    }

    /**
     * Opens and validates a GGUF model: architecture, hyper-parameters, and every tensor's presence, shape and type.
     *
     * @throws InvalidModelFileException malformed file, unsupported architecture or tensor type, missing tensor
     */
    public static GgufWeights open(Path path) throws IOException {
        GgufFile f;
        try {
            f = GgufFile.open(path);
        } catch (GgufFormatException e) {
            // The format exception's message is "<path>: at byte N: problem"; keep one copy of the path.
            throw new InvalidModelFileException(path, e.getMessage().substring(path.toString().length() + 2));
        }
        try {
            return new GgufWeights(f);
        } catch (IOException | RuntimeException e) {
            f.close();
            throw e;
        }
    }

    private double[] ropeScaling(int headSize, float theta) throws InvalidModelFileException {
        String type = file.findString(arch + ".rope.scaling.type").orElse("none");
        double positionScale = 1.0;
        switch (type) {
            case "none" -> {
            }
            case "linear" -> positionScale = 1.0 / file.findFloat(arch + ".rope.scaling.factor").orElse(1f);
            default -> throw new InvalidModelFileException(file.path(), arch + ".rope.scaling.type '" + type
                    + "' is not supported (supported: none, linear, and rope_freqs.weight factors)");
        }
        Optional<GgufTensorInfo> factors = file.tensor("rope_freqs.weight");
        if (type.equals("none") && factors.isEmpty()) {
            return null;
        }
        double[] inv = new double[headSize / 2];
        for (int j = 0; j < inv.length; j++) {
            inv[j] = positionScale / StrictMath.pow(theta, (2.0 * j) / headSize);
        }
        if (factors.isPresent()) {
            GgufTensorInfo t = factors.get();
            if (t.type() != GgmlType.F32 || t.elementCount() != inv.length) {
                throw new InvalidModelFileException(file.path(), "rope_freqs.weight is " + t.type() + " " + shape(t)
                        + ", expected F32 [" + inv.length + "]");
            }
            MemorySegment s = file.tensorData(t);
            for (int j = 0; j < inv.length; j++) {
                inv[j] /= s.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, j);
            }
        }
        return inv;
    }

    /**
     * Inverse rotary frequencies {@code 1/θ_j} after scaling, when the file asks for scaling; empty means the plain
     * {@code 1/base^(2j/headSize)}.
     */
    @Override
    public Optional<double[]> ropeInverseFrequencies() {
        return Optional.ofNullable(ropeInverseFrequencies).map(double[]::clone);
    }

    /** The GGUF tensor name of an engine tensor. */
    public String tensorName(Tensor t, int layer) {
        return switch (t) {
            case TOKEN_EMBEDDING -> "token_embd.weight";
            case CLASSIFIER -> config != null && config.sharedClassifier() ? "token_embd.weight" : "output.weight";
            case RMS_FINAL -> "output_norm.weight";
            case RMS_ATT -> "blk." + layer + ".attn_norm.weight";
            case WQ -> "blk." + layer + ".attn_q.weight";
            case WK -> "blk." + layer + ".attn_k.weight";
            case WV -> "blk." + layer + ".attn_v.weight";
            case WO -> "blk." + layer + ".attn_output.weight";
            case RMS_FFN -> "blk." + layer + ".ffn_norm.weight";
            case W1 -> "blk." + layer + ".ffn_gate.weight";
            case W2 -> "blk." + layer + ".ffn_down.weight";
            case W3 -> "blk." + layer + ".ffn_up.weight";
        };
    }

    private void check(Tensor t, int layer) throws InvalidModelFileException {
        String name = tensorName(t, layer);
        GgufTensorInfo info = tensorInfo(name);
        int rows = t.rows(config);
        int cols = t.cols(config);
        boolean vector = rows == 1;
        boolean shapeOk = vector ? info.elementCount() == cols && info.dim(1) == 1
                : info.rank() == 2 && info.dim(0) == cols && info.dim(1) == rows;
        if (!shapeOk) {
            throw new InvalidModelFileException(file.path(), "tensor " + name + " has shape " + shape(info)
                    + ", expected " + (vector ? "[" + cols + "]" : "[" + cols + ", " + rows + "]"));
        }
        if (!WIDENED.contains(info.type()) && (vector || !IN_PLACE.contains(info.type()))) {
            throw new InvalidModelFileException(file.path(), "tensor " + name + " has type " + info.type()
                    + ", which this engine does not support" + (vector ? " for a vector (supported: F32, F16, BF16)"
                    : " (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)"));
        }
        if (biases && (t == Tensor.WQ || t == Tensor.WK || t == Tensor.WV)) {
            String b = name.replace(".weight", ".bias");
            GgufTensorInfo bi = tensorInfo(b);
            if (bi.elementCount() != rows || !WIDENED.contains(bi.type())) {
                throw new InvalidModelFileException(file.path(), "tensor " + b + " is " + bi.type() + " " + shape(bi)
                        + ", expected F32/F16/BF16 [" + rows + "]");
            }
        }
    }

    private GgufTensorInfo tensorInfo(String name) throws InvalidModelFileException {
        return file.tensor(name).orElseThrow(() -> new InvalidModelFileException(file.path(),
                "missing tensor " + name + " (architecture " + arch + ")"));
    }

    private static String shape(GgufTensorInfo t) {
        return java.util.Arrays.toString(t.dims());
    }

    private String string(String key) throws InvalidModelFileException {
        try {
            return file.getString(key);
        } catch (RuntimeException e) {
            throw new InvalidModelFileException(file.path(), "metadata " + key + ": " + e.getMessage());
        }
    }

    private int integer(String key) throws InvalidModelFileException {
        try {
            return file.getInt(key);
        } catch (RuntimeException e) {
            throw new InvalidModelFileException(file.path(), "metadata " + key + ": " + e.getMessage());
        }
    }

    /** The architecture ({@code general.architecture}). */
    public String architecture() {
        return arch;
    }

    /** The underlying file (metadata for tokenizers and templates). */
    public GgufFile file() {
        return file;
    }

    @Override
    public ModelConfig config() {
        return config;
    }

    @Override
    public String describe() {
        return "GGUF " + arch + " " + file.path();
    }

    @Override
    public Optional<Path> sourceFile() {
        return Optional.of(file.path());
    }

    /** Row order of Q and K for qwen2 (halves to interleaved pairs), else null. */
    private int[] rowOrder(Tensor t) {
        if (!neox || (t != Tensor.WQ && t != Tensor.WK)) {
            return null;
        }
        int rows = t.rows(config);
        int hs = config.headSize();
        int[] order = new int[rows];
        for (int h = 0; h < rows / hs; h++) {
            for (int i = 0; i < hs / 2; i++) {
                order[h * hs + 2 * i] = h * hs + i;
                order[h * hs + 2 * i + 1] = h * hs + i + hs / 2;
            }
        }
        return order;
    }

    private GgufTensorInfo info(Tensor t, int layer) {
        return file.tensor(tensorName(t, t.perLayer() ? layer : 0)).orElseThrow();
    }

    @Override
    public Optional<StoredTensor> stored(Tensor t, int layer) {
        GgufTensorInfo info = info(t, layer);
        if (!IN_PLACE.contains(info.type())) {
            return Optional.empty();
        }
        return Optional.of(new StoredTensor(info.type(), file.tensorData(info), t.rows(config), t.cols(config), rowOrder(t)));
    }

    @Override
    public void read(Tensor t, int layer, MemorySegment dst) {
        GgufTensorInfo info = info(t, layer);
        int rows = t.rows(config);
        int cols = t.cols(config);
        MemorySegment data = file.tensorData(info);
        long rowBytes = info.type().byteSize(cols);
        int[] order = rowOrder(t);
        Kernels k = kernels();
        for (int r = 0; r < rows; r++) {
            k.dequantize(info.type(), data, (order == null ? r : order[r]) * rowBytes, cols, dst, (long) r * cols);
        }
    }

    @Override
    public Optional<float[]> bias(Tensor t, int layer) {
        if (!biases || (t != Tensor.WQ && t != Tensor.WK && t != Tensor.WV)) {
            return Optional.empty();
        }
        GgufTensorInfo info = file.tensor(tensorName(t, layer).replace(".weight", ".bias")).orElseThrow();
        int n = t.rows(config);
        float[] raw = new float[n];
        MemorySegment tmp = MemorySegment.ofArray(raw);
        kernels().dequantize(info.type(), file.tensorData(info), 0, n, tmp, 0);
        int[] order = rowOrder(t);
        if (order == null) {
            return Optional.of(raw);
        }
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = raw[order[i]];
        }
        return Optional.of(out);
    }

    private static Kernels kernels() {
        try {
            return Kernels.vector();
        } catch (LinkageError noVectorModule) {
            return Kernels.scalar(16);
        }
    }

    /**
     * The tokenizer the file's metadata describes ({@code tokenizer.ggml.model} {@code llama} or {@code gpt2}, built
     * by the tokenizer module's {@link Tokenizers#fromGgufMetadata}); empty if the file names no tokenizer model.
     *
     * @throws InvalidModelFileException an unsupported tokenizer model or pre-tokenizer, or inconsistent tokenizer
     *                                   metadata (the message names the key)
     */
    public Optional<Tokenizer> tokenizer() throws InvalidModelFileException {
        if (file.findString("tokenizer.ggml.model").isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.of(Tokenizers.fromGgufMetadata(file.metadata()));
        } catch (IllegalArgumentException e) {
            throw new InvalidModelFileException(file.path(), "tokenizer: " + e.getMessage());
        }
    }

    /** Unmaps the file (once); engines built from this source must be closed first. */
    @Override
    public void close() {
        file.close();
    }

    @Override
    public String toString() {
        return describe().toLowerCase(Locale.ROOT);
    }
}
