package dev.ripcord.stack.serve;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.BitSet;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.Test;

/** The load of one level: the same for every target, drawn from the seed alone, with an exact number of leavers. */
class LevelPlanTest {

    private static ServeOptions options(String... extra) {
        String[] args = new String[extra.length + 1];
        args[0] = "--target=a=http://h:1";
        System.arraycopy(extra, 0, args, 1, extra.length);
        return ServeOptions.parse(args, Map.of());
    }

    @Test
    void exactlyTheRoundedShareOfRequestsLeaveAtEveryShareAndSize() {
        for (int requests = 1; requests <= 200; requests += 7) {
            for (double share : new double[] {0, 0.01, 0.25, 0.3, 0.5, 0.75, 0.999, 1}) {
                BitSet leavers = LevelPlan.leavers(requests, share, new Random(requests * 31L));
                assertThat(leavers.cardinality()).as("%d requests, share %s", requests, share)
                        .isEqualTo(Math.round(share * requests));
                assertThat(leavers.length()).isLessThanOrEqualTo(requests);
            }
        }
    }

    @Test
    void theSameSeedRoundAndLevelGiveTheSamePlan() {
        ServeOptions o = options("--leave=0.3@60ms", "--requests=40");

        LevelPlan once = LevelPlan.of(o, 1, 8);
        LevelPlan again = LevelPlan.of(o, 1, 8);

        assertThat(again.prompts()).isEqualTo(once.prompts());
        assertThat(again.leavers()).isEqualTo(once.leavers());
        assertThat(once.leavers().cardinality()).isEqualTo(12);
    }

    @Test
    void anotherSeedOrRoundDrawsAnotherPlan() {
        LevelPlan seven = LevelPlan.of(options("--leave=0.5@1ms", "--requests=40"), 1, 8);
        LevelPlan eight = LevelPlan.of(options("--leave=0.5@1ms", "--requests=40", "--seed=8"), 1, 8);
        LevelPlan round2 = LevelPlan.of(options("--leave=0.5@1ms", "--requests=40"), 2, 8);

        assertThat(eight.prompts()).isNotEqualTo(seven.prompts());
        assertThat(eight.leavers()).isNotEqualTo(seven.leavers());
        assertThat(round2.prompts()).isNotEqualTo(seven.prompts());
    }

    @Test
    void promptsHaveAWordCountInTheRangeAndUseOnlyTheVocabulary() {
        LevelPlan plan = LevelPlan.of(options("--prompt-tokens=3-5", "--requests=100"), 1, 1);

        assertThat(plan.requests()).isEqualTo(100);
        for (String prompt : plan.prompts()) {
            String[] words = prompt.split(" ");
            assertThat(words.length).isBetween(3, 5);
            assertThat(LevelPlan.WORDS).contains(words);
        }
        assertThat(plan.prompts().stream().mapToInt(p -> p.split(" ").length).distinct().count()).isEqualTo(3);
    }

    @Test
    void aRequestIdEndsWithItsIndex() {
        LevelPlan plan = LevelPlan.of(options(), 2, 8);

        assertThat(plan.requestId("k3x9", "llama", 17)).isEqualTo("serve-k3x9-llama-r2-c8-17");
        assertThat(LevelPlan.index(plan.requestId("k3x9", "llama", 17))).isEqualTo(17);
    }
}
