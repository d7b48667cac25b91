package dev.ripcord.kv.session;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.ByteRange;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A write's bytes map onto its source spans: the gather both transports read a batch with. */
class WriteOpTest {

    @Test
    void writeOpMapsItsBytesOntoItsSourceSpans() {
        WriteOp op = new WriteOp(1, null,
                List.of(new ByteRange(100, 10), new ByteRange(0, 5), new ByteRange(50, 20)), 7);
        assertThat(op.length()).isEqualTo(35);
        assertThat(op.spans()).isEqualTo(3);
        assertThat(op.sourceOffsetAt(0)).isEqualTo(100);
        assertThat(op.sourceOffsetAt(9)).isEqualTo(109);
        assertThat(op.sourceOffsetAt(10)).isEqualTo(0);
        assertThat(op.sourceOffsetAt(15)).isEqualTo(50);
        assertThat(op.contiguousFrom(3)).isEqualTo(7);
        assertThat(op.contiguousFrom(10)).isEqualTo(5);
        assertThat(op.contiguousFrom(34)).isEqualTo(1);
        List<String> parts = new ArrayList<>();
        op.forEachSource(8, 20, (src, rel, len) -> parts.add(src + "@" + rel + "+" + len));
        assertThat(parts).containsExactly("108@0+2", "0@2+5", "50@7+13");
    }
}
