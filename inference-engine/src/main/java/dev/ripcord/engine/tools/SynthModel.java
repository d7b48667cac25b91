package dev.ripcord.engine.tools;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

import dev.ripcord.format.gguf.GgmlType;

/**
 * Writes a GGUF model with random weights in a realistic shape, for benchmarks:
 * <pre>
 * ./ripcord synth-model [--dim=2048] [--hidden=8192] [--layers=16] [--heads=32] [--kv-heads=8] [--vocab=32000]
 *                       [--ctx=2048] [--seed=1] [--quant=f16|f32|q8_0|q4_0] OUT.gguf
 * </pre>
 *
 * <p>Speed does not depend on the weights' values, so a file of a 1B model's shape gives the same work per token as
 * a real model of that shape, for Ripcord and llama.cpp alike, without a download. The defaults are a
 * Llama-3.2-1B-like body (grouped-query attention 32/8) on a 32,000-token vocabulary. Weights are
 * {@code N(0, 0.02)} from a seeded {@link SplittableRandom} (the same seed, the same file), RMSNorm weights 1.0, the
 * classifier tied to the embedding. The tokenizer is synthetic too: {@code <unk>}, {@code <s>}, {@code </s>}, the
 * 256 byte pieces {@code <0xHH>}, then filler pieces, so any text tokenizes (byte by byte) and any token decodes.
 *
 * <p>How: a llama2.c checkpoint and tokenizer are streamed to two temporary files next to {@code OUT} (about 4.2 GB
 * of float32 at the defaults), then {@link GgufConvert} writes {@code OUT} at the chosen type (default F16) and the
 * temporary files are deleted. K-quant files ({@code Q4_K_M}, {@code Q6_K}) come from llama.cpp's
 * {@code llama-quantize} applied to the F16 file: this project has no K-quant quantizer.
 */
public final class SynthModel {

    /** The options and their defaults, in usage order. */
    private static final Map<String, Integer> DEFAULTS = defaults();

    private SynthModel() {
    }

    private static Map<String, Integer> defaults() {
        Map<String, Integer> d = new LinkedHashMap<>();
        d.put("dim", 2048);
        d.put("hidden", 8192);
        d.put("layers", 16);
        d.put("heads", 32);
        d.put("kv-heads", 8);
        d.put("vocab", 32000);
        d.put("ctx", 2048);
        d.put("seed", 1);
        return d;
    }

    /** A model's shape, validated. */
    record Shape(int dim, int hidden, int layers, int heads, int kvHeads, int vocab, int ctx) {
        Shape {
            require(dim > 0 && hidden > 0 && layers > 0 && heads > 0 && kvHeads > 0 && ctx > 0,
                    "every size must be positive");
            require(dim % heads == 0, "dim %d is not a multiple of heads %d", dim, heads);
            require(heads % kvHeads == 0, "heads %d is not a multiple of kv-heads %d", heads, kvHeads);
            require((dim / heads) % 2 == 0, "the head size %d must be even (rotary pairs)", dim / heads);
            require(dim % 32 == 0 && hidden % 32 == 0, "dim and hidden must be multiples of 32 (quantized blocks)");
            require(vocab >= 259 + 1, "vocab %d is below the 259 special and byte pieces plus one", vocab);
        }

        int kvDim() {
            return kvHeads * (dim / heads);
        }
    }

    public static void main(String[] args) throws IOException {
        Map<String, Integer> values = new LinkedHashMap<>(DEFAULTS);
        GgmlType type = GgmlType.F16;
        Path out = null;
        for (String arg : args) {
            if (arg.equals("--help")) {
                System.out.println(usage());
                return;
            }
            if (arg.startsWith("--quant=")) {
                type = parseQuant(arg.substring("--quant=".length()));
            } else if (arg.startsWith("--") && arg.contains("=")) {
                String key = arg.substring(2, arg.indexOf('='));
                if (!values.containsKey(key)) {
                    fail("unknown option '--" + key + "'");
                }
                try {
                    values.put(key, Integer.parseInt(arg.substring(arg.indexOf('=') + 1)));
                } catch (NumberFormatException e) {
                    fail("--" + key + " takes a whole number, got '" + arg.substring(arg.indexOf('=') + 1) + "'");
                }
            } else if (arg.startsWith("--")) {
                fail("options are written --name=value, got '" + arg + "'");
            } else if (out == null) {
                out = Path.of(arg);
            } else {
                fail("one output file, got '" + out + "' and '" + arg + "'");
            }
        }
        if (out == null) {
            fail("the output file (OUT.gguf) is missing");
        }
        Shape shape;
        try {
            shape = new Shape(values.get("dim"), values.get("hidden"), values.get("layers"), values.get("heads"),
                    values.get("kv-heads"), values.get("vocab"), values.get("ctx"));
        } catch (IllegalArgumentException e) {
            fail(e.getMessage());
            return;
        }
        write(shape, values.get("seed"), type, out);
        System.out.printf(Locale.ROOT, "wrote %s (%s, dim %d, hidden %d, %d layers, %d/%d heads, vocab %d, %,d bytes)%n",
                out, type, shape.dim(), shape.hidden(), shape.layers(), shape.heads(), shape.kvHeads(), shape.vocab(),
                Files.size(out));
    }

    static GgmlType parseQuant(String v) {
        return switch (v.toLowerCase(Locale.ROOT)) {
            case "f32" -> GgmlType.F32;
            case "f16" -> GgmlType.F16;
            case "q8_0" -> GgmlType.Q8_0;
            case "q4_0" -> GgmlType.Q4_0;
            case "q4_k_m", "q6_k" -> {
                fail("--quant=" + v + ": no K-quant quantizer here; write --quant=f16, then "
                        + "llama-quantize OUT-f16.gguf OUT-" + v + ".gguf " + v.toUpperCase(Locale.ROOT));
                yield null;
            }
            default -> {
                fail("--quant takes f16, f32, q8_0 or q4_0, got '" + v + "'");
                yield null;
            }
        };
    }

    /** Writes {@code out} at {@code type}: a checkpoint and a tokenizer streamed to temporary files, converted. */
    static void write(Shape shape, long seed, GgmlType type, Path out) throws IOException {
        Path dir = out.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path checkpoint = Files.createTempFile(dir, ".synth-", ".bin");
        Path tokenizer = Files.createTempFile(dir, ".synth-", "-tokenizer.bin");
        try {
            writeCheckpoint(shape, seed, checkpoint);
            writeTokenizer(shape.vocab(), tokenizer);
            String name = "synth-%dd-%dl".formatted(shape.dim(), shape.layers());
            GgufConvert.convert(checkpoint, tokenizer, out, type, name);
        } finally {
            Files.deleteIfExists(checkpoint);
            Files.deleteIfExists(tokenizer);
        }
    }

    /** A llama2.c version-0 checkpoint (see {@code Llama2cCheckpoint}), classifier shared. */
    static void writeCheckpoint(Shape s, long seed, Path path) throws IOException {
        SplittableRandom random = new SplittableRandom(seed);
        try (OutputStream o = new BufferedOutputStream(Files.newOutputStream(path), 1 << 20)) {
            ByteBuffer header = ByteBuffer.allocate(28).order(ByteOrder.LITTLE_ENDIAN);
            for (int v : new int[] {s.dim(), s.hidden(), s.layers(), s.heads(), s.kvHeads(), s.vocab(), s.ctx()}) {
                header.putInt(v);
            }
            o.write(header.array());
            long l = s.layers();
            random(o, random, (long) s.vocab() * s.dim());           // token embedding (and classifier)
            constant(o, l * s.dim(), 1f);                            // rms_att_weight
            random(o, random, l * s.dim() * s.dim());                // wq
            random(o, random, l * s.kvDim() * s.dim());              // wk
            random(o, random, l * s.kvDim() * s.dim());              // wv
            random(o, random, l * s.dim() * s.dim());                // wo
            constant(o, l * s.dim(), 1f);                            // rms_ffn_weight
            random(o, random, l * s.hidden() * s.dim());             // w1
            random(o, random, l * s.dim() * s.hidden());             // w2
            random(o, random, l * s.hidden() * s.dim());             // w3
            constant(o, s.dim(), 1f);                                // rms_final_weight
            constant(o, (long) s.ctx() * (s.dim() / s.heads()), 0f); // freq_cis real and imaginary halves (unused)
        }
    }

    private static final int CHUNK = 1 << 16;

    private static void random(OutputStream o, SplittableRandom random, long n) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(CHUNK * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (long done = 0; done < n; ) {
            int k = (int) Math.min(CHUNK, n - done);
            buffer.clear();
            for (int i = 0; i < k; i++) {
                buffer.putFloat((float) (random.nextGaussian() * 0.02));
            }
            o.write(buffer.array(), 0, k * 4);
            done += k;
        }
    }

    private static void constant(OutputStream o, long n, float value) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(CHUNK * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < CHUNK; i++) {
            buffer.putFloat(value);
        }
        for (long done = 0; done < n; ) {
            int k = (int) Math.min(CHUNK, n - done);
            o.write(buffer.array(), 0, k * 4);
            done += k;
        }
    }

    /**
     * A llama2.c {@code tokenizer.bin} of {@code vocab} pieces: {@code <unk>}, {@code <s>}, {@code </s>} (the
     * export's control pieces, written as llama2.c writes them), the byte pieces {@code <0x00>}..{@code <0xFF>}, then
     * {@code " t<n>"} fillers with falling scores.
     */
    static void writeTokenizer(int vocab, Path path) throws IOException {
        byte[][] pieces = new byte[vocab][];
        pieces[0] = "<unk>".getBytes(StandardCharsets.UTF_8);
        pieces[1] = "\n<s>\n".getBytes(StandardCharsets.UTF_8);
        pieces[2] = "\n</s>\n".getBytes(StandardCharsets.UTF_8);
        for (int b = 0; b < 256; b++) {
            pieces[3 + b] = "<0x%02X>".formatted(b).getBytes(StandardCharsets.UTF_8);
        }
        for (int i = 259; i < vocab; i++) {
            pieces[i] = (" t" + i).getBytes(StandardCharsets.UTF_8);
        }
        int max = 0;
        for (byte[] p : pieces) {
            max = Math.max(max, p.length);
        }
        try (OutputStream o = new BufferedOutputStream(Files.newOutputStream(path))) {
            ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            o.write(b.putInt(0, max).array(), 0, 4);
            for (int i = 0; i < vocab; i++) {
                b.clear();
                b.putFloat(i < 259 ? 0f : -(i - 259)).putInt(pieces[i].length);
                o.write(b.array(), 0, 8);
                o.write(pieces[i]);
            }
        }
    }

    private static String usage() {
        StringBuilder u = new StringBuilder("usage: ./ripcord synth-model");
        DEFAULTS.forEach((k, v) -> u.append(" [--").append(k).append('=').append(v).append(']'));
        return u.append(" [--quant=f16|f32|q8_0|q4_0] OUT.gguf\n")
                .append("  writes a GGUF model with random weights of that shape (a 1B Llama-like body by default)")
                .toString();
    }

    private static void fail(String problem) {
        System.err.println("ripcord synth-model: " + problem + " (./ripcord synth-model --help)");
        System.exit(2);
    }

    private static void require(boolean ok, String template, Object... args) {
        if (!ok) {
            throw new IllegalArgumentException(template.formatted(args));
        }
    }
}
