package dev.ripcord.stack.serve;

import java.util.Map;

import dev.ripcord.stack.serve.CancelRetryBench.Leg;
import dev.ripcord.stack.serve.CancelRetryBench.Round;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CancelRetryBenchTest {

    private static final String TARGET = "--target=r=http://127.0.0.1:1";

    @Test
    void theCancelRetryScenarioIsParsedWithItsDefaultsAndItsOptionsBelongToIt() {
        ServeOptions o = ServeOptions.parse(new String[] {TARGET, "--scenario=cancel-retry"}, Map.of());
        assertThat(o.cancelRetry()).isEqualTo(new ServeOptions.CancelRetry(2048, 0.6));
        assertThat(o.multiTurn()).isNull();
        assertThat(ServeOptions.parse(new String[] {TARGET, "--scenario=cancel-retry", "--retry-prompt-tokens=900",
                "--cancel-at=0.75"}, Map.of()).cancelRetry()).isEqualTo(new ServeOptions.CancelRetry(900, 0.75));
        assertThat(ServeOptions.parse(new String[] {TARGET}, Map.of()).cancelRetry()).isNull();
        assertThatThrownBy(() -> ServeOptions.parse(new String[] {TARGET, "--cancel-at=0.5"}, Map.of()))
                .hasMessageContaining("--cancel-at belongs to --scenario=cancel-retry");
        assertThatThrownBy(() -> ServeOptions.parse(new String[] {TARGET, "--scenario=cancel-retry",
                "--cancel-at=1"}, Map.of())).hasMessageContaining("above 0 and below 1");
        assertThatThrownBy(() -> ServeOptions.parse(new String[] {TARGET, "--scenario=cancel-retry",
                "--cancel-at=half"}, Map.of())).hasMessageContaining("above 0 and below 1");
        assertThatThrownBy(() -> ServeOptions.parse(new String[] {TARGET, "--scenario=cancel-retry",
                "--turns=3"}, Map.of())).hasMessageContaining("--turns belongs to --scenario=multi-turn");
    }

    @Test
    void aRetryIsHeldToTheShareItDidNotFindCachedPlusATenth() {
        Leg cold = new Leg(true, 1_000_000_000L, "once upon", 2000, 0, null);
        Leg retry = new Leg(true, 500_000_000L, "once upon", 2000, 1024, null);
        Round round = new Round("r", 1, cold, 600_000_000L, true, retry);
        assertThat(round.cachedShare()).isEqualTo(0.512);
        assertThat(round.bound()).isCloseTo(0.588, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(round.ratio()).isEqualTo(0.5);
        assertThat(round.sameOutput()).isTrue();

        Round different = new Round("r", 1, cold, 600_000_000L, true,
                new Leg(true, 500_000_000L, "once upon a", 2000, 1024, null));
        assertThat(different.sameOutput()).isFalse();
        Round silent = new Round("r", 1, cold, 600_000_000L, true, new Leg(true, 500_000_000L, "x", 2000, -1, null));
        assertThat(silent.bound()).isNaN();
        Round failed = new Round("r", 1, cold, 0, false, new Leg(false, 0, "", -1, -1, "timeout"));
        assertThat(failed.ratio()).isNaN();
        assertThat(failed.sameOutput()).isFalse();
        assertThat(CancelRetryBench.median(new double[] {3, Double.NaN, 1, 2})).isEqualTo(2);
    }
}
