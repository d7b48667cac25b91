package dev.ripcord.gateway.generation;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

class StopStringScannerTest {

    @Test
    void stopStringSplitAcrossPiecesIsHeldBackThenDropped() {
        StopStringScanner scanner = new StopStringScanner(List.of("END"));

        assertThat(scanner.accept("Hi E")).isEqualTo("Hi ");
        assertThat(scanner.accept("N")).isEmpty();
        assertThat(scanner.accept("D and more")).isEmpty();
        assertThat(scanner.stopped()).isTrue();
    }

    @Test
    void heldBackTextIsReleasedWhenItStopsLookingLikeAStopString() {
        StopStringScanner scanner = new StopStringScanner(List.of("END"));

        assertThat(scanner.accept("EN")).isEmpty();
        assertThat(scanner.accept("X")).isEqualTo("ENX");
        assertThat(scanner.stopped()).isFalse();
    }

    @Test
    void drainReleasesWhatIsHeldAtTheEnd() {
        StopStringScanner scanner = new StopStringScanner(List.of("END"));

        assertThat(scanner.accept("abc E")).isEqualTo("abc ");
        assertThat(scanner.drain()).isEqualTo("E");
    }

    @Test
    void earliestOfSeveralStopStringsWins() {
        StopStringScanner scanner = new StopStringScanner(List.of("world", "lo w"));

        assertThat(scanner.accept("hello world")).isEqualTo("hel");
        assertThat(scanner.stopped()).isTrue();
    }

    @Test
    void holdsTheLongestSuffixThatStartsAnyStopString() {
        StopStringScanner scanner = new StopStringScanner(List.of("ab", "xyz"));

        assertThat(scanner.accept("..xy")).isEqualTo("..");
        assertThat(scanner.accept("a")).isEqualTo("xy");
        assertThat(scanner.accept("b")).isEmpty();
        assertThat(scanner.stopped()).isTrue();
    }

    @Test
    void stopAtTheVeryStartEmitsNothing() {
        StopStringScanner scanner = new StopStringScanner(List.of("\n\n"));

        assertThat(scanner.accept("\n")).isEmpty();
        assertThat(scanner.accept("\nrest")).isEmpty();
        assertThat(scanner.stopped()).isTrue();
    }

    @Test
    void withoutStopStringsEverythingPassesThrough() {
        StopStringScanner scanner = new StopStringScanner(List.of());

        assertThat(scanner.accept("abc")).isEqualTo("abc");
        assertThat(scanner.drain()).isEmpty();
    }

    @Test
    void emptyStopStringIsRefused() {
        assertThatIllegalArgumentException().isThrownBy(() -> new StopStringScanner(List.of("")));
    }

    /**
     * Whatever way a text is cut into pieces, the scanner releases exactly the text before the first stop string
     * (or all of it), the same as a scan over the whole text at once.
     */
    @Test
    void anySplitOfATextGivesTheSameResultAsScanningItWhole() {
        Random random = new Random(7);
        String alphabet = "abAB é😀";
        for (int round = 0; round < 5_000; round++) {
            String text = randomString(random, alphabet, random.nextInt(31));
            List<String> stops = List.of(randomString(random, alphabet, 1 + random.nextInt(3)),
                    randomString(random, alphabet, 1 + random.nextInt(4)));
            StopStringScanner scanner = new StopStringScanner(stops);
            StringBuilder out = new StringBuilder();
            int at = 0;
            while (at < text.length() && !scanner.stopped()) {
                int end = Math.min(text.length(), at + 1 + random.nextInt(4));
                if (end < text.length() && Character.isLowSurrogate(text.charAt(end))) {
                    end++; // a detokenizer never splits a code point
                }
                out.append(scanner.accept(text.substring(at, end)));
                at = end;
            }
            if (!scanner.stopped()) {
                out.append(scanner.drain());
            }
            assertThat(out.toString()).as("text %s, stops %s", text, stops).isEqualTo(reference(text, stops));
        }
    }

    private static String reference(String text, List<String> stops) {
        int first = text.length();
        for (String stop : stops) {
            int at = text.indexOf(stop);
            if (at >= 0) {
                first = Math.min(first, at);
            }
        }
        return text.substring(0, first);
    }

    private static String randomString(Random random, String alphabet, int codePoints) {
        int[] points = alphabet.codePoints().toArray();
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < codePoints; i++) {
            s.appendCodePoint(points[random.nextInt(points.length)]);
        }
        return s.toString();
    }
}
