package dev.ripcord.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenizerTest {
    static final ByteTokenizer BYTES = new ByteTokenizer();

    @TempDir
    Path dir;

    static String randomText(SplittableRandom r, int codePoints) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < codePoints; i++) {
            int cp = switch (r.nextInt(5)) {
                case 0 -> r.nextInt(0x20, 0x7F);
                case 1 -> r.nextInt(0x80, 0x800);
                case 2 -> r.nextInt(0x800, 0xD800);
                case 3 -> r.nextInt(0x10000, 0x110000);
                default -> " \n\téa€😀".codePointAt(r.nextInt(6));
            };
            sb.appendCodePoint(cp);
        }
        return sb.toString();
    }

    @Test
    void byteTokenizerRoundTripsAnyString() {
        SplittableRandom r = new SplittableRandom(1);
        for (int i = 0; i < 500; i++) {
            String text = randomText(r, r.nextInt(40));
            int[] tokens = BYTES.encode(text, true);
            assertThat(tokens[0]).isEqualTo(ByteTokenizer.BOS);
            assertThat(tokens.length).isEqualTo(1 + text.getBytes(StandardCharsets.UTF_8).length);
            assertThat(BYTES.decode(tokens)).isEqualTo(text);
        }
    }

    @Test
    void incrementalDetokenizationNeverEmitsHalfACharacter() {
        SplittableRandom r = new SplittableRandom(2);
        for (int i = 0; i < 300; i++) {
            String text = randomText(r, 1 + r.nextInt(30));
            IncrementalDetokenizer detokenizer = new IncrementalDetokenizer(BYTES);
            StringBuilder streamed = new StringBuilder();
            for (int token : BYTES.encode(text, false)) {
                String piece = detokenizer.accept(token);
                assertThat(piece).doesNotContain("\uFFFD");
                if (!piece.isEmpty()) {
                    assertThat(Character.isHighSurrogate(piece.charAt(piece.length() - 1)))
                            .as("a piece never ends inside a surrogate pair").isFalse();
                }
                streamed.append(piece);
                assertThat(text).startsWith(streamed);
            }
            assertThat(detokenizer.pendingBytes()).isZero();
            streamed.append(detokenizer.finish());
            assertThat(streamed.toString()).isEqualTo(text);
        }
    }

    @Test
    void aMultiByteCharacterIsHeldBackUntilComplete() {
        IncrementalDetokenizer detokenizer = new IncrementalDetokenizer(BYTES);
        int[] euro = BYTES.encode("€", false); // E2 82 AC
        assertThat(detokenizer.accept(euro[0])).isEmpty();
        assertThat(detokenizer.accept(euro[1])).isEmpty();
        assertThat(detokenizer.pendingBytes()).isEqualTo(2);
        assertThat(detokenizer.accept(euro[2])).isEqualTo("€");
    }

    @Test
    void malformedBytesBecomeReplacementCharactersAndATruncatedTailIsFlushed() {
        IncrementalDetokenizer detokenizer = new IncrementalDetokenizer(BYTES);
        assertThat(detokenizer.accept(3 + 0xFF)).isEqualTo("\uFFFD");
        assertThat(detokenizer.accept(3 + 'a')).isEqualTo("a");
        assertThat(detokenizer.accept(3 + 0xE2)).isEmpty();
        assertThat(detokenizer.accept(3 + 'b')).isEqualTo("\uFFFDb");
        assertThat(detokenizer.accept(3 + 0xF0)).isEmpty();
        assertThat(detokenizer.finish()).isEqualTo("\uFFFD");
        assertThat(detokenizer.accept(ByteTokenizer.EOS)).isEmpty();
    }

    /** A small llama-like vocabulary: specials, 256 byte-fallback tokens, then pieces with merge scores. */
    static BpeTokenizer sampleBpe() {
        List<byte[]> pieces = new ArrayList<>();
        List<Float> scores = new ArrayList<>();
        for (String special : List.of("<unk>", "\n<s>\n", "\n</s>\n")) {
            pieces.add(special.getBytes(StandardCharsets.UTF_8));
            scores.add(0f);
        }
        for (int b = 0; b < 256; b++) {
            pieces.add("<0x%02X>".formatted(b).getBytes(StandardCharsets.UTF_8));
            scores.add(0f);
        }
        String[] merges = {" ", "e", "t", "h", "a", "l", "o", " t", "th", " th", "he", " the", "ll", "lo", "llo",
            "hello", " hello", "é", "ab", "ba", "aba", "bab", "a", "b", "€", " €", "\n"};
        for (int i = 0; i < merges.length; i++) {
            pieces.add(merges[i].getBytes(StandardCharsets.UTF_8));
            scores.add(-i * 0.5f + (merges[i].length() > 2 ? 3f : 0f));
        }
        float[] s = new float[scores.size()];
        for (int i = 0; i < s.length; i++) {
            s[i] = scores.get(i);
        }
        return BpeTokenizer.of(pieces.toArray(byte[][]::new), s);
    }

    /** run.c's encode, transcribed literally (quadratic merge loop), as the reference. */
    static int[] runCEncode(BpeTokenizer t, String text, boolean bos) {
        List<Integer> tokens = new ArrayList<>();
        if (bos) {
            tokens.add(1);
        }
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > 0) {
            tokens.add(lookup(t, " ".getBytes(StandardCharsets.UTF_8)));
        }
        byte[] buffer = new byte[4];
        int len = 0;
        for (int i = 0; i < bytes.length; i++) {
            if ((bytes[i] & 0xC0) != 0x80) {
                len = 0;
            }
            buffer[len++] = bytes[i];
            if (i + 1 < bytes.length && (bytes[i + 1] & 0xC0) == 0x80 && len < 4) {
                continue;
            }
            int id = lookup(t, Arrays.copyOf(buffer, len));
            if (id != -1) {
                tokens.add(id);
            } else {
                for (int j = 0; j < len; j++) {
                    tokens.add((buffer[j] & 0xFF) + 3);
                }
            }
            len = 0;
        }
        while (true) {
            float bestScore = -1e10f;
            int bestId = -1;
            int bestIdx = -1;
            for (int i = 0; i < tokens.size() - 1; i++) {
                byte[] a = t.piece(tokens.get(i));
                byte[] b = t.piece(tokens.get(i + 1));
                byte[] joined = Arrays.copyOf(a, a.length + b.length);
                System.arraycopy(b, 0, joined, a.length, b.length);
                int id = lookup(t, joined);
                if (id != -1 && t.score(id) > bestScore) {
                    bestScore = t.score(id);
                    bestId = id;
                    bestIdx = i;
                }
            }
            if (bestIdx == -1) {
                break;
            }
            tokens.set(bestIdx, bestId);
            tokens.remove(bestIdx + 1);
        }
        return tokens.stream().mapToInt(Integer::intValue).toArray();
    }

    static int lookup(BpeTokenizer t, byte[] piece) {
        for (int i = 0; i < t.vocabSize(); i++) {
            if (Arrays.equals(t.piece(i), piece)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void bpeEncodesExactlyAsRunC() {
        BpeTokenizer bpe = sampleBpe();
        SplittableRandom r = new SplittableRandom(3);
        String alphabet = "thelloab é€\n😀xyz";
        for (int i = 0; i < 400; i++) {
            StringBuilder sb = new StringBuilder();
            int n = r.nextInt(25);
            for (int j = 0; j < n; j++) {
                sb.appendCodePoint(alphabet.codePointAt(alphabet.offsetByCodePoints(0, r.nextInt(
                        alphabet.codePointCount(0, alphabet.length())))));
            }
            String text = sb.toString();
            boolean bos = r.nextBoolean();
            assertThat(bpe.encode(text, bos)).as("encode(%s)", text).containsExactly(runCEncode(bpe, text, bos));
        }
        assertThat(bpe.encode("", true)).containsExactly(1);
    }

    @Test
    void bpeDecodesPiecesByteFallbackAndStripsTheSpaceAfterBos() {
        BpeTokenizer bpe = sampleBpe();
        String text = "hello the 😀 abab é€";
        int[] tokens = bpe.encode(text, true);
        // After BOS the dummy-prefix space is dropped, exactly as run.c prints it, so the text comes back as is.
        assertThat(bpe.decode(tokens)).isEqualTo(text);
        assertThat(new String(bpe.tokenBytes(-1, tokens[1]), StandardCharsets.UTF_8)).startsWith(" ");
        assertThat(new String(bpe.tokenBytes(1, tokens[1]), StandardCharsets.UTF_8)).doesNotStartWith(" ");
        assertThat(bpe.tokenBytes(-1, 3 + 0x41)).containsExactly(0x41);
        assertThat(bpe.tokenBytes(-1, bpe.eos())).isEmpty();
    }

    @Test
    void tokenizerBinRoundTripsAndMalformedFilesNameTheProblem() throws IOException {
        BpeTokenizer bpe = sampleBpe();
        Path file = dir.resolve("tokenizer.bin");
        bpe.write(file);
        BpeTokenizer loaded = BpeTokenizer.load(file, bpe.vocabSize());
        assertThat(loaded.encode("hello the world", true)).containsExactly(bpe.encode("hello the world", true));

        byte[] bytes = Files.readAllBytes(file);
        Path truncated = dir.resolve("truncated.bin");
        Files.write(truncated, Arrays.copyOf(bytes, bytes.length - 3));
        assertThatThrownBy(() -> BpeTokenizer.load(truncated, bpe.vocabSize()))
                .isInstanceOf(InvalidTokenizerFileException.class)
                .hasMessageContaining(truncated.toString()).hasMessageContaining("truncated");
        assertThatThrownBy(() -> BpeTokenizer.load(file, bpe.vocabSize() - 1))
                .hasMessageContaining("bytes left after").hasMessageContaining("vocabulary size");
        Path badLength = dir.resolve("bad-length.bin");
        ByteBuffer b = ByteBuffer.wrap(bytes.clone()).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(8, 9999); // first token's length
        Files.write(badLength, b.array());
        assertThatThrownBy(() -> BpeTokenizer.load(badLength, bpe.vocabSize()))
                .hasMessageContaining("token 0 has length 9999");
        assertThatThrownBy(() -> BpeTokenizer.load(dir.resolve("missing.bin"), 300))
                .hasMessageContaining("missing.bin").hasMessageContaining("no such file");
    }
}
