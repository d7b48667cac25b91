package dev.ripcord.protocol.prefix;

import java.util.Arrays;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PrefixCacheEventTest {

    @Test
    void everyKindRoundTripsThroughItsBytes() {
        for (PrefixCacheEvent.Kind kind : PrefixCacheEvent.Kind.values()) {
            long[] keys = kind == PrefixCacheEvent.Kind.CLEARED ? new long[0] : new long[] {-1L, 42L, Long.MIN_VALUE};
            PrefixCacheEvent event = new PrefixCacheEvent("prefill-0.prefill:8081", 0x5eedL, 7, kind, 64, keys);
            assertThat(PrefixCacheEvent.decode(event.encode())).isEqualTo(event);
        }
    }

    @Test
    void aTruncatedOrForeignRecordIsRejected() {
        byte[] bytes = new PrefixCacheEvent("w:1", 1, 1, PrefixCacheEvent.Kind.STORED, 64, new long[] {1, 2}).encode();
        assertThatThrownBy(() -> PrefixCacheEvent.decode(Arrays.copyOf(bytes, bytes.length - 3)))
                .isInstanceOf(IllegalArgumentException.class);
        byte[] other = bytes.clone();
        other[0] = 9;
        assertThatThrownBy(() -> PrefixCacheEvent.decode(other)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("version");
    }
}
