package dev.ripcord.stack.serve;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/** The serve bench's arithmetic on exact inputs: percentiles, inter-token gaps, medians, ratios, the roll-up. */
class StatsTest {

    @Test
    void percentilesAreNearestRank() {
        long[] sorted = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};

        assertThat(Stats.percentile(sorted, 50)).isEqualTo(50);
        assertThat(Stats.percentile(sorted, 99)).isEqualTo(100);
        assertThat(Stats.percentile(sorted, 10)).isEqualTo(10);
        assertThat(Stats.percentile(sorted, 11)).isEqualTo(20);
        assertThat(Stats.percentile(new long[] {7}, 99)).isEqualTo(7);
        assertThat(Stats.percentile(new long[0], 50)).isNaN();
    }

    @Test
    void interTokenGapsAreTheDifferencesOfConsecutiveEventTimes() {
        assertThat(Stats.gaps(new long[] {1_000, 1_500, 4_000, 4_000})).containsExactly(500, 2_500, 0);
        assertThat(Stats.gaps(new long[] {42})).isEmpty();
        assertThat(Stats.gaps(new long[0])).isEmpty();
    }

    @Test
    void medianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
        assertThat(Stats.median(new double[] {3, 1, 2})).isEqualTo(2);
        assertThat(Stats.median(new double[] {4, 1, 3, 2})).isEqualTo(2.5);
        assertThat(Stats.median(new double[0])).isNaN();
    }

    @Test
    void aRatioToNothingIsNotANumber() {
        assertThat(Stats.ratio(30, 20)).isEqualTo(1.5);
        assertThat(Stats.ratio(30, 0)).isNaN();
        assertThat(Stats.ratio(Double.NaN, 2)).isNaN();
        assertThat(Stats.ratio(2, Double.NaN)).isNaN();
    }

    @Test
    void aPhaseCountsCompletedTokensOverItsWallTimeAndPoolsEveryStreamsGaps() {
        List<RequestResult> results = List.of(
                RequestResult.completed(64, 5_000_000, 100_000_000, new long[] {1_000_000, 3_000_000}),
                RequestResult.completed(64, 7_000_000, 120_000_000, new long[] {2_000_000}),
                RequestResult.left(),
                RequestResult.failed("HTTP 503"),
                RequestResult.failed("HTTP 503"),
                RequestResult.failed("timeout"));

        PhaseResult phase = PhaseResult.of(results, 2_000_000_000L);

        assertThat(phase.requests()).isEqualTo(6);
        assertThat(phase.completed()).isEqualTo(2);
        assertThat(phase.left()).isEqualTo(1);
        assertThat(phase.failed()).isEqualTo(3);
        assertThat(phase.failures()).containsExactly(Map.entry("HTTP 503", 2), Map.entry("timeout", 1));
        assertThat(phase.tokens()).isEqualTo(128);
        assertThat(phase.tokensPerSecond()).isEqualTo(64.0);
        assertThat(phase.ttftNanos()).containsExactly(5_000_000, 7_000_000);
        assertThat(phase.itlNanos()).containsExactly(1_000_000, 2_000_000, 3_000_000);
        assertThat(phase.e2eNanos()).containsExactly(100_000_000, 120_000_000);
    }

    @Test
    void levelFiguresSumCountsTakeTheMedianRoundsThroughputAndPoolLatencies() {
        PhaseResult slow = PhaseResult.of(List.of(
                RequestResult.completed(10, 4_000_000, 50_000_000, new long[] {1_000_000}),
                RequestResult.failed("HTTP 429")), 1_000_000_000L);
        PhaseResult fast = PhaseResult.of(List.of(
                RequestResult.completed(10, 2_000_000, 30_000_000, new long[] {3_000_000}),
                RequestResult.left()), 500_000_000L);
        PhaseResult middle = PhaseResult.of(List.of(
                RequestResult.completed(10, 6_000_000, 40_000_000, new long[] {2_000_000})), 800_000_000L);

        LevelFigures f = LevelFigures.of("llama", 8, List.of(slow, fast, middle));

        assertThat(f.rounds()).isEqualTo(3);
        assertThat(f.requests()).isEqualTo(5);
        assertThat(f.completed()).isEqualTo(3);
        assertThat(f.failed()).isEqualTo(1);
        assertThat(f.failures()).containsExactlyEntriesOf(Map.of("HTTP 429", 1));
        assertThat(f.left()).isEqualTo(1);
        assertThat(f.tokens()).isEqualTo(30);
        assertThat(f.tokensPerSecond()).isEqualTo(12.5); // rounds: 10, 20, 12.5 tok/s
        assertThat(f.ttftP50()).isEqualTo(4.0);
        assertThat(f.ttftP99()).isEqualTo(6.0);
        assertThat(f.itlP50()).isEqualTo(2.0);
        assertThat(f.itlP99()).isEqualTo(3.0);
        assertThat(f.e2eP50()).isEqualTo(40.0);
    }

    @Test
    void aLevelWhereNothingCompletedHasNoLatencies() {
        LevelFigures f = LevelFigures.of("x", 1, List.of(PhaseResult.of(List.of(RequestResult.left()), 1_000)));

        assertThat(f.tokensPerSecond()).isZero();
        assertThat(f.ttftP50()).isNaN();
        assertThat(f.itlP99()).isNaN();
        assertThat(f.e2eP50()).isNaN();
    }
}
