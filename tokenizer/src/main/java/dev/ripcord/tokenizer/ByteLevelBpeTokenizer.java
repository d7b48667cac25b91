package dev.ripcord.tokenizer;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * GPT-2-style byte-level BPE ({@code tokenizer.ggml.model = gpt2}: Llama 3, Qwen2, SmolLM), encoding as Hugging Face
 * tokenizers and llama.cpp's {@code llm_tokenizer_bpe} do.
 *
 * <p>Encoding a plain-text fragment: the {@link PreTokenizer} splits it into words; each word's UTF-8 bytes are
 * spelled with GPT-2's byte-to-character table (printable bytes as themselves, the others shifted to U+0100 and up,
 * so a space is {@code Ġ}); then the adjacent pair with the lowest merge rank ({@code tokenizer.ggml.merges}, "left
 * right", first = rank 0) is merged, the leftmost on ties, until no pair has a rank. Llama 3 ({@code ignore_merges})
 * takes a word that is a whole token as that token without merging. No BOS unless asked; no space prefix.
 *
 * <p>Decoding maps the characters back to bytes; control/unknown/unused tokens are nothing; user-defined tokens are
 * their text.
 */
public final class ByteLevelBpeTokenizer extends VocabularyTokenizer {
    private static final char[] BYTE_TO_CHAR = new char[256];
    private static final int[] CHAR_TO_BYTE = new int[512];

    static {
        Arrays.fill(CHAR_TO_BYTE, -1);
        int shifted = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = printable ? (char) b : (char) (256 + shifted++);
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = b;
        }
    }

    private final Map<String, Integer> ranks;
    private final PreTokenizer preTokenizer;

    ByteLevelBpeTokenizer(Vocabulary vocabulary, List<String> merges, PreTokenizer preTokenizer) {
        super(vocabulary);
        this.preTokenizer = preTokenizer;
        this.ranks = new HashMap<>(merges.size() * 2);
        for (int rank = 0; rank < merges.size(); rank++) {
            String merge = merges.get(rank);
            int space = merge.indexOf(' ', 1);
            Checks.requireArgument(space > 0 && space < merge.length() - 1, "merge %s ('%s') is not 'left right'",
                    rank, merge);
            ranks.putIfAbsent(merge, rank);
        }
    }

    /** How plain text is split into words before the merges. */
    public PreTokenizer preTokenizer() {
        return preTokenizer;
    }

    @Override
    void encodeFragment(String text, boolean afterSpecial, IdList out) {
        for (String word : preTokenizer.split(text)) {
            encodeWord(byteLevel(word), out);
        }
    }

    /** {@code word}'s UTF-8 bytes, one character each (GPT-2's table). */
    static String byteLevel(String word) {
        byte[] bytes = word.getBytes(StandardCharsets.UTF_8);
        char[] chars = new char[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            chars[i] = BYTE_TO_CHAR[bytes[i] & 0xFF];
        }
        return new String(chars);
    }

    private record Bigram(int rank, int left, int leftLength, int rightLength) {
    }

    private void encodeWord(String word, IdList out) {
        if (preTokenizer.ignoreMerges()) {
            int whole = vocabulary.id(word);
            if (whole >= 0) {
                out.add(whole);
                return;
            }
        }
        int n = word.length(); // one char per byte
        int[] length = new int[n];
        int[] next = new int[n];
        int[] prev = new int[n];
        for (int i = 0; i < n; i++) {
            length[i] = 1;
            prev[i] = i - 1;
            next[i] = i + 1 < n ? i + 1 : -1;
        }
        PriorityQueue<Bigram> queue = new PriorityQueue<>((a, b) -> a.rank != b.rank
                ? Integer.compare(a.rank, b.rank) : Integer.compare(a.left, b.left));
        for (int i = 0; i + 1 < n; i++) {
            offer(queue, word, i, length, next);
        }
        while (!queue.isEmpty()) {
            Bigram bigram = queue.poll();
            int left = bigram.left;
            int right = next[left];
            if (length[left] != bigram.leftLength || right < 0 || length[right] != bigram.rightLength) {
                continue; // stale
            }
            length[left] += length[right];
            length[right] = 0;
            next[left] = next[right];
            if (next[right] >= 0) {
                prev[next[right]] = left;
            }
            if (prev[left] >= 0) {
                offer(queue, word, prev[left], length, next);
            }
            offer(queue, word, left, length, next);
        }
        for (int i = 0; i >= 0; i = next[i]) {
            String symbol = word.substring(i, i + length[i]);
            int id = vocabulary.id(symbol);
            if (id >= 0) {
                out.add(id);
                continue;
            }
            for (int c = 0; c < symbol.length(); c++) { // a symbol without a token: its bytes, one by one
                int byteToken = vocabulary.id(symbol.substring(c, c + 1));
                out.add(byteToken >= 0 ? byteToken : vocabulary.special().unknown());
            }
        }
    }

    private void offer(PriorityQueue<Bigram> queue, String word, int left, int[] length, int[] next) {
        int right = next[left];
        if (right < 0) {
            return;
        }
        String key = word.substring(left, left + length[left]) + ' ' + word.substring(right, right + length[right]);
        Integer rank = ranks.get(key);
        if (rank != null) {
            queue.add(new Bigram(rank, left, length[left], length[right]));
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
        if (vocabulary.type(token) == Vocabulary.USER_DEFINED) {
            return text.getBytes(StandardCharsets.UTF_8);
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            int b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
            if (b >= 0) {
                bytes.write(b);
            } else {
                bytes.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
            }
        }
        return bytes.toByteArray();
    }
}
