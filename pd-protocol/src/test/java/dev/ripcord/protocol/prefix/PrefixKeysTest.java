package dev.ripcord.protocol.prefix;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class PrefixKeysTest {
    private static final int PAGE = 16;

    private static int[] tokens(int n, int salt) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = (i * 31 + salt) % 32000;
        }
        return t;
    }

    @Test
    void onlyCompletePagesHaveKeys() {
        long seed = PrefixKeys.seed("preset:small/seed:1", PAGE, null);
        assertThat(PrefixKeys.keys(seed, PAGE, tokens(15, 0))).isEmpty();
        assertThat(PrefixKeys.keys(seed, PAGE, tokens(16, 0))).hasSize(1);
        assertThat(PrefixKeys.keys(seed, PAGE, tokens(47, 0))).hasSize(2);
    }

    @Test
    void aSharedPrefixSharesItsKeysAndADifferentTokenChangesEveryLaterKey() {
        long seed = PrefixKeys.seed("m", PAGE, null);
        int[] a = tokens(64, 0);
        int[] b = a.clone();
        b[20] = b[20] + 1; // page 1
        long[] ka = PrefixKeys.keys(seed, PAGE, a);
        long[] kb = PrefixKeys.keys(seed, PAGE, b);
        assertThat(kb[0]).isEqualTo(ka[0]);
        for (int i = 1; i < 4; i++) {
            assertThat(kb[i]).as("page %s", i).isNotEqualTo(ka[i]);
        }
        assertThat(PrefixKeys.keys(seed, PAGE, a, 40)).containsExactly(Arrays.copyOf(ka, 2));
    }

    @Test
    void theModelThePageSizeAndTheSaltEachSeparateTheKeys() {
        int[] t = tokens(32, 7);
        long base = PrefixKeys.seed("m", PAGE, null);
        assertThat(PrefixKeys.seed("m", PAGE, "")).isEqualTo(base);
        assertThat(PrefixKeys.seed("m2", PAGE, null)).isNotEqualTo(base);
        assertThat(PrefixKeys.seed("m", 32, null)).isNotEqualTo(base);
        assertThat(PrefixKeys.seed("m", PAGE, "tenant-a")).isNotEqualTo(base);
        assertThat(PrefixKeys.keys(PrefixKeys.seed("m", PAGE, "tenant-a"), PAGE, t)[0])
                .isNotEqualTo(PrefixKeys.keys(base, PAGE, t)[0]);
    }

    @Test
    void keysAreAFunctionOfTheirInputsOnly() {
        long seed = PrefixKeys.seed("sha256:00", PAGE, "s");
        assertThat(PrefixKeys.keys(seed, PAGE, tokens(48, 3))).containsExactly(PrefixKeys.keys(seed, PAGE, tokens(48, 3)));
    }
}
