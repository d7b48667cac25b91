package dev.ripcord.tokenizer;

import java.nio.charset.StandardCharsets;

/**
 * The default tokenizer: one token per UTF-8 byte, so any (well-formed) string round-trips exactly.
 *
 * <p>Ids follow llama2.c's conventions, which makes them coincide with a Llama vocabulary's byte-fallback tokens:
 * 0 = unknown/padding, 1 = BOS, 2 = EOS, {@code 3 + b} = byte {@code b}. {@link #VOCAB_SIZE} is 259; a larger
 * vocabulary (a real checkpoint without its tokenizer file) decodes ids above 258 as U+FFFD.
 */
public final class ByteTokenizer implements Tokenizer {
    public static final int VOCAB_SIZE = 259;
    public static final int BOS = 1;
    public static final int EOS = 2;
    static final int BYTE_OFFSET = 3;
    private static final byte[] REPLACEMENT = "\uFFFD".getBytes(StandardCharsets.UTF_8);

    private final int vocabSize;

    public ByteTokenizer() {
        this(VOCAB_SIZE);
    }

    /** A byte tokenizer over a model vocabulary of {@code vocabSize >= 259} ids. */
    public ByteTokenizer(int vocabSize) {
        Checks.requireArgument(vocabSize >= VOCAB_SIZE, "a byte tokenizer needs a vocabulary of at least %s, got %s",
                VOCAB_SIZE, vocabSize);
        this.vocabSize = vocabSize;
    }

    @Override
    public int vocabSize() {
        return vocabSize;
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
        int start = addBos ? 1 : 0;
        int[] tokens = new int[bytes.length + start];
        if (addBos) {
            tokens[0] = BOS;
        }
        for (int i = 0; i < bytes.length; i++) {
            tokens[start + i] = BYTE_OFFSET + (bytes[i] & 0xFF);
        }
        return tokens;
    }

    @Override
    public byte[] tokenBytes(int previous, int token) {
        Checks.requireArgument(token >= 0 && token < vocabSize, "token %s outside vocabulary of %s", token, vocabSize);
        if (token < BYTE_OFFSET) {
            return new byte[0];
        }
        if (token < BYTE_OFFSET + 256) {
            return new byte[] {(byte) (token - BYTE_OFFSET)};
        }
        return REPLACEMENT.clone();
    }
}
