package dev.ripcord.tokenizer;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * llama2.c's BPE tokenizer ({@code tokenizer.bin}), encoding exactly as {@code run.c} does.
 *
 * <p>File format (little-endian): {@code int32 max_token_length}, then for each of the model's {@code vocab_size}
 * tokens {@code float32 score, int32 len, len bytes}. The vocabulary size is not in the file; it comes from the
 * checkpoint header.
 *
 * <p>Encoding: optional BOS (1); a "dummy prefix" space token if the text is not empty; each UTF-8 character
 * (up to 4 bytes) as its vocabulary token, or as byte-fallback tokens {@code byte + 3} if it has none; then
 * repeatedly merge the adjacent pair whose concatenation is in the vocabulary with the highest score, the
 * leftmost on ties. {@code run.c} rescans the whole sequence per merge (quadratic); here a priority queue with
 * lazy invalidation picks the same pair in the same order, so long prompts encode in {@code O(n log n)}.
 *
 * <p>Decoding: a token's piece, without its leading space right after BOS; pieces of the form {@code <0xHH>} are
 * the raw byte {@code HH}; ids 0-2 (unknown, BOS, EOS) decode to nothing.
 */
public final class BpeTokenizer implements Tokenizer {
    private static final int BOS = 1;
    private static final int EOS = 2;
    /** run.c's initial best score: a merge must score above it to happen. */
    private static final float NO_MERGE_SCORE = -1e10f;

    private final byte[][] pieces;
    private final float[] scores;
    private final Map<String, Integer> ids;
    private final int maxTokenLength;

    private BpeTokenizer(byte[][] pieces, float[] scores, int maxTokenLength) {
        this.pieces = pieces;
        this.scores = scores;
        this.maxTokenLength = maxTokenLength;
        this.ids = new HashMap<>(pieces.length * 2);
        for (int i = 0; i < pieces.length; i++) {
            ids.putIfAbsent(key(pieces[i], 0, pieces[i].length), i);
        }
    }

    /**
     * Reads a llama2.c {@code tokenizer.bin} with {@code vocabSize} entries.
     *
     * @throws InvalidTokenizerFileException if the file is truncated, has trailing bytes or an impossible entry
     */
    public static BpeTokenizer load(Path path, int vocabSize) throws IOException {
        Checks.requireArgument(vocabSize > 3, "vocabSize must exceed the 3 special tokens, got %s", vocabSize);
        if (!Files.isRegularFile(path)) {
            throw new InvalidTokenizerFileException(path, "no such file");
        }
        ByteBuffer in = ByteBuffer.wrap(Files.readAllBytes(path)).order(ByteOrder.LITTLE_ENDIAN);
        if (in.remaining() < Integer.BYTES) {
            throw new InvalidTokenizerFileException(path, "file is %d bytes, shorter than the 4-byte max_token_length "
                    .formatted(in.remaining()) + "header");
        }
        int maxTokenLength = in.getInt();
        if (maxTokenLength <= 0 || maxTokenLength > 4096) {
            throw new InvalidTokenizerFileException(path, "max_token_length %d is implausible; is this a llama2.c "
                    .formatted(maxTokenLength) + "tokenizer.bin?");
        }
        byte[][] pieces = new byte[vocabSize][];
        float[] scores = new float[vocabSize];
        for (int i = 0; i < vocabSize; i++) {
            if (in.remaining() < 8) {
                throw new InvalidTokenizerFileException(path, "truncated at token %d of %d (offset %d): expected a "
                        .formatted(i, vocabSize, in.position()) + "score and a length");
            }
            scores[i] = in.getFloat();
            int len = in.getInt();
            if (len < 0 || len > maxTokenLength) {
                throw new InvalidTokenizerFileException(path, "token %d has length %d outside [0, max_token_length=%d]"
                        .formatted(i, len, maxTokenLength));
            }
            if (in.remaining() < len) {
                throw new InvalidTokenizerFileException(path, "truncated inside token %d of %d: %d bytes announced, %d "
                        .formatted(i, vocabSize, len, in.remaining()) + "left");
            }
            pieces[i] = new byte[len];
            in.get(pieces[i]);
        }
        if (in.hasRemaining()) {
            throw new InvalidTokenizerFileException(path, "%d bytes left after %d tokens; the tokenizer does not match "
                    .formatted(in.remaining(), vocabSize) + "the model's vocabulary size");
        }
        return new BpeTokenizer(pieces, scores, maxTokenLength);
    }

    /** Builds a tokenizer from pieces and scores (tests, tools). */
    public static BpeTokenizer of(byte[][] pieces, float[] scores) {
        Checks.requireArgument(pieces.length == scores.length, "%s pieces but %s scores", pieces.length,
                scores.length);
        int max = 1;
        for (byte[] p : pieces) {
            max = Math.max(max, p.length);
        }
        return new BpeTokenizer(pieces.clone(), scores.clone(), max);
    }

    /** Writes this vocabulary in llama2.c's {@code tokenizer.bin} format. */
    public void write(Path path) throws IOException {
        int size = Integer.BYTES;
        for (byte[] p : pieces) {
            size += 8 + p.length;
        }
        ByteBuffer out = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(maxTokenLength);
        for (int i = 0; i < pieces.length; i++) {
            out.putFloat(scores[i]).putInt(pieces[i].length).put(pieces[i]);
        }
        Files.write(path, out.array());
    }

    /** Bytes as a Latin-1 string: an exact, hashable key for a byte sequence. */
    private static String key(byte[] bytes, int from, int to) {
        return new String(bytes, from, to - from, StandardCharsets.ISO_8859_1);
    }

    private int lookup(String key) {
        Integer id = ids.get(key);
        return id == null ? -1 : id;
    }

    @Override
    public int vocabSize() {
        return pieces.length;
    }

    @Override
    public int bos() {
        return BOS;
    }

    @Override
    public int eos() {
        return EOS;
    }

    @Override
    public int[] encode(String text, boolean addBos) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] tokens = new int[bytes.length + 2];
        int n = 0;
        if (addBos) {
            tokens[n++] = BOS;
        }
        if (bytes.length > 0) {
            int space = lookup(" ");
            if (space >= 0) {
                tokens[n++] = space;
            }
        }
        // run.c's grouping: a character is a lead byte plus up to three continuation bytes.
        int start = 0;
        for (int i = 0; i < bytes.length; i++) {
            if ((bytes[i] & 0xC0) != 0x80) {
                start = i;
            }
            int len = i - start + 1;
            if (i + 1 < bytes.length && (bytes[i + 1] & 0xC0) == 0x80 && len < 4) {
                continue;
            }
            int id = lookup(key(bytes, start, i + 1));
            if (id >= 0) {
                tokens[n++] = id;
            } else {
                for (int b = start; b <= i; b++) {
                    tokens[n++] = (bytes[b] & 0xFF) + 3;
                }
            }
            start = i + 1;
        }
        int merged = merge(tokens, 0, n); // run.c merges over BOS too (it never matches)
        return Arrays.copyOf(tokens, merged);
    }

    /** A candidate merge of the symbol at {@code left} with its right neighbour. */
    private record Candidate(float score, int left, int leftToken, int rightToken, int merged) {
    }

    /** Merges {@code tokens[from, to)} in place (run.c's order); returns the new end. */
    private int merge(int[] tokens, int from, int to) {
        int n = to - from;
        if (n < 2) {
            return to;
        }
        int[] token = Arrays.copyOfRange(tokens, from, to);
        int[] next = new int[n];
        int[] prev = new int[n];
        boolean[] alive = new boolean[n];
        for (int i = 0; i < n; i++) {
            next[i] = i + 1 < n ? i + 1 : -1;
            prev[i] = i - 1;
            alive[i] = true;
        }
        PriorityQueue<Candidate> queue = new PriorityQueue<>((a, b) -> a.score != b.score
                ? Float.compare(b.score, a.score) : Integer.compare(a.left, b.left));
        for (int i = 0; i + 1 < n; i++) {
            offer(queue, i, token[i], token[i + 1]);
        }
        while (!queue.isEmpty()) {
            Candidate c = queue.poll();
            int right = next[c.left];
            if (!alive[c.left] || right < 0 || token[c.left] != c.leftToken || token[right] != c.rightToken) {
                continue; // stale: one side was merged since this candidate was queued
            }
            token[c.left] = c.merged;
            alive[right] = false;
            next[c.left] = next[right];
            if (next[right] >= 0) {
                prev[next[right]] = c.left;
            }
            if (prev[c.left] >= 0) {
                offer(queue, prev[c.left], token[prev[c.left]], c.merged);
            }
            if (next[c.left] >= 0) {
                offer(queue, c.left, c.merged, token[next[c.left]]);
            }
        }
        int out = from;
        for (int i = 0; i >= 0; i = next[i]) {
            tokens[out++] = token[i];
        }
        return out;
    }

    private void offer(PriorityQueue<Candidate> queue, int left, int leftToken, int rightToken) {
        byte[] a = pieces[leftToken];
        byte[] b = pieces[rightToken];
        byte[] joined = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, joined, a.length, b.length);
        int merged = lookup(key(joined, 0, joined.length));
        if (merged >= 0 && scores[merged] > NO_MERGE_SCORE) {
            queue.add(new Candidate(scores[merged], left, leftToken, rightToken, merged));
        }
    }

    @Override
    public byte[] tokenBytes(int previous, int token) {
        Checks.requireArgument(token >= 0 && token < pieces.length, "token %s outside vocabulary of %s", token,
                pieces.length);
        if (token <= EOS) {
            return new byte[0]; // <unk>, BOS and EOS are control tokens, not text
        }
        byte[] piece = pieces[token];
        int start = previous == BOS && piece.length > 0 && piece[0] == ' ' ? 1 : 0;
        if (piece.length == 6 && piece[0] == '<' && piece[1] == '0' && piece[2] == 'x' && piece[5] == '>') {
            int hi = Character.digit(piece[3], 16);
            int lo = Character.digit(piece[4], 16);
            if (hi >= 0 && lo >= 0) {
                return new byte[] {(byte) (hi << 4 | lo)};
            }
        }
        return Arrays.copyOfRange(piece, start, piece.length);
    }

    /** The piece as text ({@code <s>}, {@code </s>} for BOS and EOS). */
    @Override
    public String tokenText(int token) {
        return new String(pieces[token], StandardCharsets.UTF_8);
    }

    /** A token's raw piece as stored in the vocabulary. */
    public byte[] piece(int token) {
        return pieces[token].clone();
    }

    public float score(int token) {
        return scores[token];
    }
}
