package dev.ripcord.gateway.generation;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import reactor.util.context.Context;

class RequestTimingsTest {

    @Test
    void firstMarkOfANameWinsAndOrderIsKept() {
        RequestTimings timings = RequestTimings.recording();
        timings.mark("b", 20);
        timings.mark("a", 10);
        timings.mark("b", 30);

        assertThat(timings.marks()).containsExactly(java.util.Map.entry("b", 20L), java.util.Map.entry("a", 10L));
        assertThat(timings.sseComment()).isEqualTo(": ripcord-timing {\"b\":20,\"a\":10}\n\n");
    }

    @Test
    void aGenerationThatDidNotAskRecordsNothing() {
        RequestTimings none = RequestTimings.of(Context.empty());
        none.mark("gateway.received");
        none.mark("x", 1);

        assertThat(none).isSameAs(RequestTimings.NONE);
        assertThat(none.enabled()).isFalse();
        assertThat(none.marks()).isEmpty();
    }

    @Test
    void theContextCarriesTheEdgesTimings() {
        RequestTimings timings = RequestTimings.recording();
        assertThat(RequestTimings.of(Context.of(RequestTimings.CONTEXT_KEY, timings))).isSameAs(timings);
    }

    @Test
    void onlyAnAffirmativeHeaderAsks() {
        assertThat(RequestTimings.asked(null)).isFalse();
        assertThat(RequestTimings.asked("0")).isFalse();
        assertThat(RequestTimings.asked("false")).isFalse();
        assertThat(RequestTimings.asked("1")).isTrue();
        assertThat(RequestTimings.asked("true")).isTrue();
    }
}
