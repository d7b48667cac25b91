package dev.ripcord.engine.weights;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

import dev.ripcord.engine.InvalidModelFileException;
import dev.ripcord.engine.ModelConfig;

/**
 * A llama2.c checkpoint (the "legacy" version-0 export of {@code export.py}, which is what {@code run.c} reads).
 *
 * <pre>
 * offset 0   int32 dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len   (little-endian)
 *            vocab_size &lt; 0 means an unshared classifier of |vocab_size| rows follows at the end
 * offset 28  float32 token_embedding_table [vocab][dim]
 *            rms_att_weight [layers][dim]
 *            wq [layers][dim][dim]            (row = output feature)
 *            wk [layers][kv_dim][dim]
 *            wv [layers][kv_dim][dim]
 *            wo [layers][dim][dim]
 *            rms_ffn_weight [layers][dim]
 *            w1 [layers][hidden][dim]
 *            w2 [layers][dim][hidden]
 *            w3 [layers][hidden][dim]
 *            rms_final_weight [dim]
 *            freq_cis_real [seq_len][head_size/2]   (unused: rotary tables are recomputed)
 *            freq_cis_imag [seq_len][head_size/2]   (unused)
 *            wcls [vocab][dim]                      (only when unshared)
 * </pre>
 *
 * <p>Ownership: {@link #open} maps the whole file read-only into an {@link Arena#ofConfined() confined arena}
 * that this object owns. The mapping is only needed while the engine repacks the weights into its own memory, so
 * the engine reads every tensor and then {@link #close() closes} the checkpoint, which unmaps the file; nothing
 * keeps a pointer into the mapping afterwards. The confined arena ties that to the constructing thread.
 */
public final class Llama2cCheckpoint implements WeightSource, AutoCloseable {
    static final int HEADER_BYTES = 7 * Integer.BYTES;
    /** "ak42" read as a little-endian int: the magic of llama2.c's version 1 and 2 exports. */
    static final int VERSIONED_MAGIC = 0x616b3432;

    private final Path path;
    private final ModelConfig config;
    private final Arena arena;
    private final MemorySegment file;

    private Llama2cCheckpoint(Path path, ModelConfig config, Arena arena, MemorySegment file) {
        this.path = path;
        this.config = config;
        this.arena = arena;
        this.file = file;
    }

    /**
     * Validates the header and the file size, then maps the file.
     *
     * @throws InvalidModelFileException if the file is not a well-formed legacy llama2.c checkpoint; the message
     *                                   names the file and what is wrong
     * @throws IOException               if the file cannot be read
     */
    public static Llama2cCheckpoint open(Path path) throws IOException {
        ModelConfig config = readHeader(path);
        long expected = expectedBytes(config);
        long actual = Files.size(path);
        if (actual != expected) {
            throw new InvalidModelFileException(path, actual < expected
                    ? "file is %d bytes but its header (%s) requires %d bytes; the file is truncated"
                            .formatted(actual, describeHeader(config), expected)
                    : "file is %d bytes but its header (%s) requires exactly %d bytes; trailing data means a "
                            .formatted(actual, describeHeader(config), expected)
                            + "different format or a corrupt header");
        }
        Arena arena = Arena.ofConfined();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            MemorySegment file = channel.map(FileChannel.MapMode.READ_ONLY, 0, actual, arena);
            return new Llama2cCheckpoint(path, config, arena, file);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** Reads and validates only the 28-byte header. */
    public static ModelConfig readHeader(Path path) throws IOException {
        if (!Files.isRegularFile(path)) {
            throw new InvalidModelFileException(path, "no such file");
        }
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            while (header.hasRemaining()) {
                if (channel.read(header) < 0) {
                    throw new InvalidModelFileException(path, "file is %d bytes, shorter than the %d-byte header"
                            .formatted(header.position(), HEADER_BYTES));
                }
            }
        }
        header.flip();
        int dim = header.getInt();
        if (dim == VERSIONED_MAGIC) {
            throw new InvalidModelFileException(path, "starts with the magic 'ak42' of a llama2.c version 1/2 "
                    + "export; only the legacy version 0 format is supported (export.py --version 0)");
        }
        int hidden = header.getInt();
        int layers = header.getInt();
        int heads = header.getInt();
        int kvHeads = header.getInt();
        int vocab = header.getInt();
        int seqLen = header.getInt();
        String fields = "dim=%d hidden_dim=%d n_layers=%d n_heads=%d n_kv_heads=%d vocab_size=%d seq_len=%d"
                .formatted(dim, hidden, layers, heads, kvHeads, vocab, seqLen);
        if (dim <= 0 || hidden <= 0 || layers <= 0 || heads <= 0 || kvHeads <= 0 || vocab == 0 || seqLen <= 0
                || vocab == Integer.MIN_VALUE) {
            throw new InvalidModelFileException(path, "header has a non-positive dimension (" + fields + ")");
        }
        if (dim % heads != 0 || heads % kvHeads != 0 || (dim / heads) % 2 != 0) {
            throw new InvalidModelFileException(path, "header is inconsistent: dim must be divisible by n_heads, "
                    + "n_heads by n_kv_heads, and the head size must be even (" + fields + ")");
        }
        if (dim > 1 << 16 || hidden > 1 << 18 || layers > 1024 || vocab > 1 << 22 || vocab < -(1 << 22)
                || seqLen > 1 << 22) {
            throw new InvalidModelFileException(path, "header has implausible dimensions; is this a llama2.c "
                    + "checkpoint? (" + fields + ")");
        }
        return ModelConfig.llama2c(dim, hidden, layers, heads, kvHeads, Math.abs(vocab), seqLen, vocab > 0);
    }

    /** Exact size of a checkpoint with this configuration. */
    public static long expectedBytes(ModelConfig c) {
        long floats = 0;
        for (Tensor t : Tensor.values()) {
            if (t != Tensor.CLASSIFIER || !c.sharedClassifier()) {
                floats += t.size(c) * t.count(c);
            }
        }
        floats += (long) c.contextLength() * c.headSize(); // freq_cis_real + freq_cis_imag
        return HEADER_BYTES + floats * Float.BYTES;
    }

    /** Byte offset of {@code (tensor, layer)} in the file. */
    static long offset(ModelConfig c, Tensor tensor, int layer) {
        long floats = 0;
        for (Tensor t : Tensor.values()) {
            if (t == tensor) {
                return HEADER_BYTES + (floats + t.size(c) * layer) * Float.BYTES;
            }
            floats += t.size(c) * t.count(c);
            if (t == Tensor.RMS_FINAL) {
                floats += (long) c.contextLength() * c.headSize();
            }
        }
        throw new AssertionError(tensor);
    }

    private static String describeHeader(ModelConfig c) {
        return "dim=%d hidden_dim=%d n_layers=%d n_heads=%d n_kv_heads=%d vocab_size=%d seq_len=%d".formatted(
                c.dim(), c.hiddenDim(), c.layers(), c.heads(), c.kvHeads(),
                c.sharedClassifier() ? c.vocabSize() : -c.vocabSize(), c.contextLength());
    }

    @Override
    public ModelConfig config() {
        return config;
    }

    @Override
    public String describe() {
        return "llama2.c checkpoint " + path;
    }

    public Path path() {
        return path;
    }

    @Override
    public Optional<Path> sourceFile() {
        return Optional.of(path);
    }

    @Override
    public void read(Tensor tensor, int layer, MemorySegment dst) {
        Tensor source = tensor == Tensor.CLASSIFIER && config.sharedClassifier() ? Tensor.TOKEN_EMBEDDING : tensor;
        long bytes = source.size(config) * Float.BYTES;
        MemorySegment.copy(file, offset(config, source, source.perLayer() ? layer : 0), dst, 0, bytes);
    }

    /** Unmaps the file. */
    @Override
    public void close() {
        arena.close();
    }

    /**
     * Writes {@code source} as a legacy llama2.c checkpoint (including the rotary tables llama2.c's exporter
     * writes, so the file is byte-compatible with {@code run.c}).
     */
    public static void write(Path path, WeightSource source) throws IOException {
        ModelConfig c = source.config();
        try (Arena scratch = Arena.ofConfined();
             FileChannel out = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                     StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            header.putInt(c.dim()).putInt(c.hiddenDim()).putInt(c.layers()).putInt(c.heads()).putInt(c.kvHeads())
                    .putInt(c.sharedClassifier() ? c.vocabSize() : -c.vocabSize()).putInt(c.contextLength()).flip();
            writeFully(out, header);
            long largest = 0;
            for (Tensor t : Tensor.values()) {
                largest = Math.max(largest, t.size(c));
            }
            largest = Math.max(largest, (long) c.contextLength() * c.headSize() / 2);
            MemorySegment buffer = scratch.allocate(largest * Float.BYTES, 64);
            for (Tensor t : Tensor.values()) {
                if (t == Tensor.CLASSIFIER && c.sharedClassifier()) {
                    continue;
                }
                for (int layer = 0; layer < t.count(c); layer++) {
                    source.read(t, layer, buffer);
                    writeFully(out, buffer.asSlice(0, t.size(c) * Float.BYTES).asByteBuffer());
                }
                if (t == Tensor.RMS_FINAL) {
                    writeRopeTables(out, c, buffer);
                }
            }
        }
    }

    private static void writeRopeTables(FileChannel out, ModelConfig c, MemorySegment buffer) throws IOException {
        int half = c.headSize() / 2;
        for (int part = 0; part < 2; part++) {
            long n = 0;
            for (int pos = 0; pos < c.contextLength(); pos++) {
                for (int j = 0; j < half; j++) {
                    double freq = 1.0 / StrictMath.pow(c.ropeTheta(), (2.0 * j) / c.headSize());
                    double angle = pos * freq;
                    float v = (float) (part == 0 ? StrictMath.cos(angle) : StrictMath.sin(angle));
                    buffer.set(ValueLayout.JAVA_FLOAT_UNALIGNED, (n++) * Float.BYTES, v);
                }
            }
            writeFully(out, buffer.asSlice(0, n * Float.BYTES).asByteBuffer());
        }
    }

    private static void writeFully(FileChannel out, ByteBuffer bytes) throws IOException {
        while (bytes.hasRemaining()) {
            out.write(bytes);
        }
    }
}
