package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class ReceiveDescriptorTest {
    @Test
    void encodeParseRoundTripsEveryField() {
        ReceiveDescriptor shm = new ReceiveDescriptor("req|42 ~ é/,+", "decode-1", -7L, "10.0.0.5", 7001,
                "vm/1234", "/dev/shm/ripcord kv|r1.region", "/dev/shm/f.fences", 3, 99, 12, Long.MIN_VALUE, 4,
                List.of(new ByteRange(8192, 4096), new ByteRange(0, 4096)), 8192);
        ReceiveDescriptor tcp = new ReceiveDescriptor("r", "d", 1, "h", 1, null, null, null, -1, 0, 1, 7, 1,
                List.of(new ByteRange(0, 1)), 1);
        for (ReceiveDescriptor d : List.of(shm, tcp)) {
            String wire = d.encode();
            assertThat(wire).doesNotContain("\n").startsWith("kvrd1|");
            assertThat(ReceiveDescriptor.parse(wire)).isEqualTo(d);
        }
        assertThat(shm.offersSharedMemory()).isTrue();
        assertThat(tcp.offersSharedMemory()).isFalse();
        assertThat(shm.toString()).contains("req|42").doesNotContain("/dev/shm");
    }

    @Test
    void rejectsWhatIsNotADescriptor() {
        assertThatThrownBy(() -> ReceiveDescriptor.parse("hello")).isInstanceOf(IllegalArgumentException.class);
        String good = new ReceiveDescriptor("r", "d", 1, "h", 1, null, null, null, -1, 0, 1, 7, 1,
                List.of(new ByteRange(0, 1)), 1).encode();
        assertThatThrownBy(() -> ReceiveDescriptor.parse(good.replace("|1|7|1|", "|x|7|1|")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ReceiveDescriptor("r", "d", 1, "h", 1, null, null, null, -1, 0, 1, 7, 1,
                List.of(new ByteRange(0, 1)), 2)).hasMessageContaining("sum");
    }
}
