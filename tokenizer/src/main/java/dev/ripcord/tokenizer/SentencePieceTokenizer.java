package dev.ripcord.tokenizer;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/**
 * A SentencePiece-style vocabulary with scores ({@code tokenizer.ggml.model = llama}: Llama 2, TinyLlama, Mistral),
 * encoding as llama.cpp's {@code llm_tokenizer_spm} does and SentencePiece's BPE model does.
 *
 * <p>Encoding a plain-text fragment: spaces become {@code ▁} (U+2581), with one {@code ▁} in front of the first
 * fragment and of every fragment right after a special token when {@code add_space_prefix} is set; the text is
 * split into characters (code points); then the adjacent pair whose concatenation is a token with the highest score
 * is merged, the leftmost on ties, until no pair is a token. A character with no token becomes its UTF-8 bytes as
 * {@code <0xHH>} byte tokens (byte fallback), or the unknown token where the vocabulary has none.
 *
 * <p>Decoding: {@code ▁} is a space, {@code <0xHH>} byte tokens are that byte, control/unknown/unused tokens are
 * nothing, and the space that {@code add_space_prefix} put in front of the first word is removed right after BOS.
 */
public final class SentencePieceTokenizer extends VocabularyTokenizer {
    private static final char SPACE = '\u2581';

    private final float[] scores;
    private final boolean addSpacePrefix;
    private final int[] byteTokens = new int[256];

    SentencePieceTokenizer(Vocabulary vocabulary, float[] scores, boolean addSpacePrefix) {
        super(vocabulary);
        Checks.requireArgument(scores.length == vocabulary.size(), "%s scores for %s tokens", scores.length,
                vocabulary.size());
        this.scores = scores;
        this.addSpacePrefix = addSpacePrefix;
        for (int b = 0; b < 256; b++) {
            byteTokens[b] = vocabulary.id("<0x%02X>".formatted(b));
        }
    }

    @Override
    void encodeFragment(String text, boolean afterSpecial, IdList out) {
        String plain = (addSpacePrefix && afterSpecial ? " " : "") + text;
        encodePlain(plain.replace(' ', SPACE), out);
    }

    /** A candidate merge of symbol {@code left} with its right neighbour, valid while both keep their lengths. */
    private record Bigram(float score, int left, int leftLength, int rightLength) {
    }

    private void encodePlain(String text, IdList out) {
        if (text.isEmpty()) {
            return;
        }
        // Symbols are code points; start[i]/length[i] index into text (chars), next/prev link the live ones.
        int n = text.codePointCount(0, text.length());
        int[] start = new int[n];
        int[] length = new int[n];
        int[] next = new int[n];
        int[] prev = new int[n];
        for (int i = 0, at = 0; i < n; i++) {
            int len = Character.charCount(text.codePointAt(at));
            start[i] = at;
            length[i] = len;
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
            at += len;
        }
        PriorityQueue<Bigram> queue = new PriorityQueue<>((a, b) -> a.score != b.score
                ? Float.compare(b.score, a.score) : Integer.compare(a.left, b.left));
        for (int i = 0; i + 1 < n; i++) {
            offer(queue, text, i, start, length, next);
        }
        while (!queue.isEmpty()) {
            Bigram bigram = queue.poll();
            int left = bigram.left;
            int right = next[left];
            if (length[left] != bigram.leftLength || right < 0 || length[right] != bigram.rightLength) {
                continue; // stale: a side was merged since this was queued
            }
            length[left] += length[right];
            length[right] = 0;
            next[left] = next[right];
            if (next[right] >= 0) {
                prev[next[right]] = left;
            }
            if (prev[left] >= 0) {
                offer(queue, text, prev[left], start, length, next);
            }
            offer(queue, text, left, start, length, next);
        }
        for (int i = 0; i >= 0; i = next[i]) {
            String symbol = text.substring(start[i], start[i] + length[i]);
            int id = vocabulary.id(symbol);
            if (id >= 0) {
                out.add(id);
                continue;
            }
            for (byte b : symbol.getBytes(StandardCharsets.UTF_8)) {
                int byteToken = byteTokens[b & 0xFF];
                out.add(byteToken >= 0 ? byteToken : vocabulary.special().unknown());
            }
        }
    }

    private void offer(PriorityQueue<Bigram> queue, String text, int left, int[] start, int[] length, int[] next) {
        int right = next[left];
        if (right < 0) {
            return;
        }
        int id = vocabulary.id(text.substring(start[left], start[right] + length[right]));
        if (id >= 0) {
            queue.add(new Bigram(scores[id], left, length[left], length[right]));
        }
    }

    @Override
    public byte[] tokenBytes(int previous, int token) {
        Checks.requireArgument(token >= 0 && token < vocabulary.size(), "token %s outside vocabulary of %s", token,
                vocabulary.size());
        if (vocabulary.silent(token)) {
            return new byte[0];
        }
        String text = vocabulary.text(token);
        if (vocabulary.type(token) == Vocabulary.BYTE) {
            int b = Vocabulary.byteValue(text);
            if (b >= 0) {
                return new byte[] {(byte) b};
            }
        }
        String decoded = text.replace(SPACE, ' ');
        if (addSpacePrefix && previous >= 0 && previous == bos() && decoded.startsWith(" ")) {
            decoded = decoded.substring(1);
        }
        return decoded.getBytes(StandardCharsets.UTF_8);
    }

    /** The token's score (higher merges first). */
    public float score(int token) {
        return scores[token];
    }

    /** Ids in {@code tokens} spelled as the vocabulary stores them (for tests and debugging). */
    public List<String> texts(int[] tokens) {
        List<String> out = new ArrayList<>(tokens.length);
        for (int t : tokens) {
            out.add(vocabulary.text(t));
        }
        return out;
    }
}
