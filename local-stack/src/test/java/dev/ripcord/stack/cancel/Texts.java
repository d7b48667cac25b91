package dev.ripcord.stack.cancel;

import java.nio.charset.StandardCharsets;

/** ASCII prompts of exact byte lengths: the byte tokenizer makes one token per byte, plus BOS. */
public final class Texts {

    private static final String TEXT = "The quick brown fox jumps over the lazy dog while the cat watches. "
            + "Pack my box with five dozen liquor jugs; how vexingly quick daft zebras jump! ";

    private Texts() {
    }

    /** ASCII text of exactly {@code bytes} bytes. */
    public static String ofBytes(int bytes) {
        return ofBytes(bytes, 0);
    }

    /** ASCII text of exactly {@code bytes} bytes, starting {@code shift} characters into the sample text. */
    public static String ofBytes(int bytes, int shift) {
        StringBuilder s = new StringBuilder(bytes + TEXT.length());
        int from = Math.floorMod(shift, TEXT.length());
        s.append(TEXT, from, TEXT.length());
        while (s.length() < bytes) {
            s.append(TEXT);
        }
        String prompt = s.substring(0, bytes);
        assert prompt.getBytes(StandardCharsets.UTF_8).length == bytes;
        return prompt;
    }

    /** Prefill chunks of a prompt of {@code bytes} bytes (BOS included) in chunks of {@code chunkTokens}. */
    public static int chunks(int bytes, int chunkTokens) {
        return (bytes + 1 + chunkTokens - 1) / chunkTokens;
    }
}
