package dev.ripcord.kv.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ripcord.kv.ByteRange;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TargetMapTest {
    @Test
    void mapsLogicalSpansAcrossScatteredAndAdjacentPages() {
        // pages 5,6 (adjacent: merged), then page 1, then page 9
        TargetMap m = new TargetMap(List.of(new ByteRange(500, 100), new ByteRange(600, 100),
                new ByteRange(100, 100), new ByteRange(900, 100)), 1000);
        assertThat(m.totalBytes()).isEqualTo(400);
        List<String> parts = new ArrayList<>();
        m.forEach(150, 200, (at, rel, n) -> parts.add(at + "@" + rel + "+" + n));
        assertThat(parts).containsExactly("650@0+50", "100@50+100", "900@150+50");
        parts.clear();
        m.forEach(0, 400, (at, rel, n) -> parts.add(at + "@" + rel + "+" + n));
        assertThat(parts).containsExactly("500@0+200", "100@200+100", "900@300+100");
    }

    @Test
    void rejectsOverlapsOutOfRegionAndOutOfSpan() {
        assertThatThrownBy(() -> new TargetMap(List.of(new ByteRange(0, 10), new ByteRange(5, 10)), 100))
                .hasMessageContaining("overlap");
        assertThatThrownBy(() -> new TargetMap(List.of(new ByteRange(95, 10)), 100))
                .hasMessageContaining("beyond");
        TargetMap m = new TargetMap(List.of(new ByteRange(0, 10)), 100);
        assertThat(m.contains(5, 5)).isTrue();
        assertThat(m.contains(5, 6)).isFalse();
        assertThat(m.contains(Long.MAX_VALUE, 1)).isFalse();
        assertThatThrownBy(() -> m.forEach(8, 3, (a, r, n) -> { })).isInstanceOf(IllegalArgumentException.class);
    }
}
