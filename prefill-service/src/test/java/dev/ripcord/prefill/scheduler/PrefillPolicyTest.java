package dev.ripcord.prefill.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The prefill scheduling policy driven step by step, as the engine loop drives it: which prompt gets each chunk,
 * which waiting prompts start, which wait for pages, which expire. Orderings and counts only; "time" is a number
 * the test passes in.
 */
class PrefillPolicyTest {

    private static final int CHUNK = 100;
    private static final int PAGE = 16;

    private final PrefillPolicy<String> policy = new PrefillPolicy<>(8, CHUNK, PAGE, 16);
    private final List<String> served = new ArrayList<>();

    /** One engine-loop step: admit, pick, compute the picked prompt's chunk; returns whom it served (or null). */
    private String step(int freePages) {
        policy.admit(freePages);
        PrefillPolicy.Entry<String> next = policy.next(freePages);
        if (next == null) {
            return null;
        }
        int end = policy.chunkEnd(next);
        policy.computed(next, end - policy.done(next));
        if (end == next.tokens) {
            policy.remove(next);
        }
        served.add(next.job);
        return next.job;
    }

    @Test
    void aShortPromptArrivingBehindALongOneRunsBeforeTheLongOneContinues() {
        policy.enqueue("long", 1000, 0);
        assertThat(step(1000)).isEqualTo("long");
        policy.enqueue("short", 50, 1);
        assertThat(step(1000)).isEqualTo("short");
        assertThat(step(1000)).isEqualTo("long");
        assertThat(policy.running()).isEqualTo(1);
    }

    @Test
    void chunksAreSharedByTokensNotByTurns() {
        // Round-robin by count would alternate long, mid, long, ... giving the long prompt 100 tokens per turn
        // while the mid one needs 150 in all; by cost the mid one finishes in its two chunks first.
        policy.enqueue("long", 1000, 0);
        policy.enqueue("mid", 150, 0);
        assertThat(List.of(step(1000), step(1000), step(1000))).containsExactly("mid", "mid", "long");
    }

    @Test
    void aLongPromptIsNeverStarvedByAStreamOfShortOnes() {
        policy.enqueue("long", 1000, 0);
        assertThat(step(1000)).isEqualTo("long");
        // A new 100-token prompt arrives before every step: shortest-first alone would never serve "long" again.
        int longChunks = 1;
        int steps = 0;
        int lastLongStep = 0;
        int longestGap = 0;
        while (longChunks < 10) {
            policy.enqueue("short-" + steps, 100, steps);
            steps++;
            if ("long".equals(step(1000))) {
                longChunks++;
                longestGap = Math.max(longestGap, steps - lastLongStep);
                lastLongStep = steps;
            }
            assertThat(steps).as("the long prompt finishes within a bounded number of steps").isLessThan(200);
        }
        // Served again once others computed as many tokens as it has left: at most 900 / 100 short chunks, + itself.
        assertThat(longestGap).isLessThanOrEqualTo(10);
        assertThat(policy.runningEntries()).extracting(e -> e.job).doesNotContain("long");
    }

    @Test
    void aWaitingPromptThatDoesNotFitIsPassedOnlyUntilItHasAged() {
        PrefillPolicy<String> small = new PrefillPolicy<>(8, CHUNK, PAGE, 16);
        small.enqueue("giant", 320, 0); // 20 pages
        small.enqueue("a", 32, 0); // 2 pages each
        // 8 pages free: the giant does not fit, the small ones pass it while its key (320 - credit) is positive.
        int passed = 0;
        List<PrefillPolicy.Entry<String>> started = small.admit(8);
        while (!started.isEmpty()) {
            assertThat(started).extracting(e -> e.job).doesNotContain("giant");
            for (PrefillPolicy.Entry<String> e : started) {
                small.computed(e, 32);
                small.remove(e);
                passed++;
            }
            small.enqueue("small-" + passed, 32, passed);
            started = small.admit(8);
            assertThat(passed).isLessThan(100);
        }
        // Passed exactly until others computed 320 tokens: its own length.
        assertThat(passed).isEqualTo(10);
        assertThat(small.waiting()).isEqualTo(2);
        // Its pages come back: it starts, first.
        assertThat(small.admit(40)).extracting(e -> e.job).containsExactly("giant", "small-10");
    }

    @Test
    void startingAPromptCountsThePagesTheRunningOnesWillStillAllocate() {
        policy.enqueue("first", 320, 0); // 20 pages
        assertThat(policy.admit(30)).hasSize(1);
        policy.enqueue("second", 320, 0);
        // 30 free, but "first" will still take 20 of them: "second" waits for pages rather than failing later.
        assertThat(policy.admit(30)).isEmpty();
        assertThat(policy.admit(40)).extracting(e -> e.job).containsExactly("second");
    }

    @Test
    void aRunningPromptWhoseNextChunksPagesAreNotFreeWaitsAndAnotherRuns() {
        policy.enqueue("a", 200, 0);
        policy.enqueue("b", 300, 0);
        assertThat(policy.admit(100)).hasSize(2);
        // 7 pages free: "a"'s first chunk needs ceil(100/16) = 7, fits; then 0 free: nobody runs.
        assertThat(policy.next(7).job).isEqualTo("a");
        assertThat(policy.next(0)).isNull();
    }

    @Test
    void atMostMaxRunningRunAndTheRestWaitInKeyOrder() {
        PrefillPolicy<String> two = new PrefillPolicy<>(2, CHUNK, PAGE, 16);
        two.enqueue("300", 300, 0);
        two.enqueue("100", 100, 0);
        two.enqueue("200", 200, 0);
        assertThat(two.admit(1000)).extracting(e -> e.job).containsExactly("100", "200");
        assertThat(two.running()).isEqualTo(2);
        assertThat(two.waiting()).isEqualTo(1);
    }

    @Test
    void queuedPromptsPastTheirDeadlineExpireAndRunningOnesDoNot() {
        policy.enqueue("running", 100, 0);
        policy.admit(1000);
        policy.enqueue("old", 100, 10);
        policy.enqueue("new", 100, 30);
        assertThat(policy.expire(20)).extracting(e -> e.job).containsExactly("old");
        assertThat(policy.waiting()).isEqualTo(1);
        assertThat(policy.running()).isEqualTo(1);
    }

    @Test
    void theWorkAheadOfANewPromptIsWhatGoesFirstAndTheRemainingWorkIsEverything() {
        policy.enqueue("long", 1000, 0);
        policy.enqueue("short", 50, 0);
        policy.admit(1000);
        assertThat(policy.tokensAhead(100)).isEqualTo(50);
        assertThat(policy.tokensAhead(2000)).isEqualTo(1050);
        assertThat(policy.remainingTokens()).isEqualTo(1050);
    }

    @Test
    void aFullQueueTakesNoMore() {
        PrefillPolicy<String> one = new PrefillPolicy<>(1, CHUNK, PAGE, 1);
        assertThat(one.enqueue("a", 10, 0)).isNotNull();
        assertThat(one.enqueue("b", 10, 0)).isNull();
        assertThat(one.waiting()).isEqualTo(1);
    }
}
