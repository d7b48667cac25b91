package dev.ripcord.stack.e2e;

import java.nio.charset.StandardCharsets;

/** Prompts of exact UTF-8 byte lengths (the byte tokenizer makes one token per byte, plus BOS). */
final class Prompts {

    private static final String TEXT = "The quick brown fox jumps over the lazy dog while the cat watches. ";

    private Prompts() {
    }

    /** ASCII text of exactly {@code bytes} bytes. */
    static String ofBytes(int bytes) {
        StringBuilder s = new StringBuilder(bytes);
        while (s.length() < bytes) {
            s.append(TEXT);
        }
        String prompt = s.substring(0, bytes);
        assert prompt.getBytes(StandardCharsets.UTF_8).length == bytes;
        return prompt;
    }

    /** The ChatML string the gateway renders for one user message (see docs/openai.md). */
    static String chatml(String userMessage) {
        return "<|im_start|>user\n" + userMessage + "<|im_end|>\n<|im_start|>assistant\n";
    }
}
