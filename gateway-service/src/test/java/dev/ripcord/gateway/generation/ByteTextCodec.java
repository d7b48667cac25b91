package dev.ripcord.gateway.generation;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A byte-level {@link TextCodec} for tests: token {@code b} is the byte {@code b} (0..255), {@link #EOS} renders as
 * nothing. The detokenizer holds back an incomplete UTF-8 sequence until its last byte arrives, like a real one.
 */
public final class ByteTextCodec implements TextCodec {

    public static final int EOS = 257;
    public static final String MODEL = "ripcord-small";
    public static final int CONTEXT_LENGTH = 256;
    public static final int MAX_TOKENS_LIMIT = 100;

    @Override
    public int[] encode(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        int[] tokens = new int[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            tokens[i] = bytes[i] & 0xFF;
        }
        return tokens;
    }

    /** The text a token sequence stands for (the inverse of {@link #encode}). */
    public static String decode(int[] tokens) {
        byte[] bytes = new byte[tokens.length];
        for (int i = 0; i < tokens.length; i++) {
            bytes[i] = (byte) tokens[i];
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    @Override
    public int vocabularySize() {
        return 258;
    }

    @Override
    public int contextLength() {
        return CONTEXT_LENGTH;
    }

    @Override
    public String modelName() {
        return MODEL;
    }

    @Override
    public int maxTokensLimit() {
        return MAX_TOKENS_LIMIT;
    }

    @Override
    public Detokenizer newDetokenizer() {
        return new ByteDetokenizer();
    }

    private static final class ByteDetokenizer implements Detokenizer {

        private final ByteArrayOutputStream pending = new ByteArrayOutputStream();

        @Override
        public String accept(int tokenId) {
            if (tokenId > 255) {
                return "";
            }
            pending.write(tokenId);
            byte[] bytes = pending.toByteArray();
            int complete = bytes.length - incompleteTail(bytes);
            pending.reset();
            pending.write(bytes, complete, bytes.length - complete);
            return new String(Arrays.copyOf(bytes, complete), StandardCharsets.UTF_8);
        }

        @Override
        public String flush() {
            String rest = pending.toString(StandardCharsets.UTF_8);
            pending.reset();
            return rest;
        }

        /** Bytes at the end that start a multi-byte sequence still missing its continuation bytes. */
        private static int incompleteTail(byte[] bytes) {
            for (int back = 1; back <= Math.min(3, bytes.length); back++) {
                int b = bytes[bytes.length - back] & 0xFF;
                if ((b & 0xC0) == 0x80) {
                    continue; // continuation byte: look further back for its leading byte
                }
                int needed = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
                return needed > back ? back : 0;
            }
            return 0;
        }
    }
}
