package dev.ripcord.gateway.model;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import dev.ripcord.tokenizer.ByteTokenizer;

/**
 * What the gateway needs to know about the served model's shape: its vocabulary size and context length. Read
 * from a llama2.c checkpoint's 28-byte header or a GGUF file's metadata, or taken from the built-in presets, without the engine library (the
 * gateway never loads weights). The workers validate the whole file; this reader only rejects headers that cannot
 * be a llama2.c version-0 checkpoint, so that a wrong file fails at the gateway with the same kind of message.
 *
 * <p>The preset table mirrors the engine's {@code Preset} enum; deployment-tests' {@code ServedShapeTest} fails if
 * the two ever disagree.
 *
 * @param vocabSize     valid token ids are {@code 0 .. vocabSize - 1}
 * @param contextLength prompt plus completion must fit in it
 */
public record ServedShape(int vocabSize, int contextLength) {

    private static final int HEADER_BYTES = 7 * Integer.BYTES;
    /** {@code "ak42"} little-endian: llama2.c's versioned (v1/v2) export, which the engine does not read. */
    private static final int VERSIONED_MAGIC = 0x616b3432;

    /** The shape of built-in preset {@code name} ({@code tiny} or {@code small}, case-insensitive). */
    public static ServedShape preset(String name) {
        return switch (name.trim().toLowerCase(Locale.ROOT)) {
            case "tiny" -> new ServedShape(ByteTokenizer.VOCAB_SIZE, 512);
            case "small" -> new ServedShape(ByteTokenizer.VOCAB_SIZE, 16_384);
            default -> throw new IllegalArgumentException("unknown preset '%s'; known: tiny, small".formatted(name));
        };
    }

    /**
     * The shape a GGUF model's metadata gives: {@code <general.architecture>.context_length} and the vocabulary size
     * ({@code <arch>.vocab_size}, else the length of {@code tokenizer.ggml.tokens}).
     */
    public static ServedShape ofGgufMetadata(Path path, Map<String, Object> metadata) throws IOException {
        if (!(metadata.get("general.architecture") instanceof String arch)) {
            throw new IOException(path + ": GGUF metadata has no general.architecture");
        }
        if (!(metadata.get(arch + ".context_length") instanceof Long context) || context <= 0
                || context > Integer.MAX_VALUE) {
            throw new IOException("%s: GGUF metadata has no usable %s.context_length".formatted(path, arch));
        }
        long vocab;
        if (metadata.get(arch + ".vocab_size") instanceof Long v) {
            vocab = v;
        } else if (metadata.get("tokenizer.ggml.tokens") instanceof List<?> tokens) {
            vocab = tokens.size();
        } else {
            throw new IOException(path + ": GGUF metadata has neither " + arch + ".vocab_size nor tokenizer.ggml.tokens");
        }
        return new ServedShape(Math.toIntExact(vocab), Math.toIntExact(context));
    }

    /** Reads the vocabulary size and context length from a llama2.c (legacy version 0) checkpoint's header. */
    public static ServedShape ofLlama2cCheckpoint(Path path) throws IOException {
        if (!Files.isRegularFile(path)) {
            throw new IOException(path + ": no such file");
        }
        ByteBuffer header = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            while (header.hasRemaining()) {
                if (channel.read(header) < 0) {
                    throw new IOException("%s: file is %d bytes, shorter than the %d-byte llama2.c header"
                            .formatted(path, header.position(), HEADER_BYTES));
                }
            }
        }
        header.flip();
        int[] fields = new int[7];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = header.getInt();
        }
        if (fields[0] == VERSIONED_MAGIC) {
            throw new IOException(path + ": starts with the magic 'ak42' of a llama2.c version 1/2 export; only the "
                    + "legacy version 0 format is supported (export.py --version 0)");
        }
        int vocab = fields[5];
        int seqLen = fields[6];
        for (int i = 0; i < 5; i++) {
            if (fields[i] <= 0) {
                throw new IOException(path + ": header has a non-positive dimension; is this a llama2.c checkpoint?");
            }
        }
        if (vocab == 0 || vocab == Integer.MIN_VALUE || Math.abs(vocab) > 1 << 22 || seqLen <= 0
                || seqLen > 1 << 22) {
            throw new IOException("%s: header has an implausible vocab_size %d or seq_len %d; is this a llama2.c "
                    .formatted(path, vocab, seqLen) + "checkpoint?");
        }
        return new ServedShape(Math.abs(vocab), seqLen); // a negative vocab_size flags an unshared classifier
    }
}
