package dev.ripcord.stack.serve;

import java.util.BitSet;
import java.util.List;
import java.util.Random;

/**
 * What one level of one round sends, the same to every target: each request's prompt, and which requests' clients
 * leave. Drawn from the seed, the round and the concurrency alone, so two targets at the same level get the same
 * load and a rerun with the same seed gets the same again.
 *
 * @param round       the round, from 1
 * @param concurrency clients in flight
 * @param prompts     request {@code i}'s prompt
 * @param leavers     the requests whose client disconnects
 */
public record LevelPlan(int round, int concurrency, List<String> prompts, BitSet leavers) {

    /**
     * Simple words that a Llama-family tokenizer (stories15M's among them) takes as about one token each, with the
     * leading space a prompt gives them.
     */
    static final List<String> WORDS = List.of("the", "little", "girl", "boy", "dog", "cat", "sun", "tree", "park",
            "ball", "red", "big", "happy", "sad", "play", "run", "jump", "saw", "said", "went", "home", "mom", "dad",
            "friend", "toy", "car", "bird", "sky", "day", "night", "good", "new", "old", "small", "blue", "green",
            "water", "box", "book", "house", "walk", "look", "find", "help", "want", "like", "love", "fun", "time",
            "once", "upon", "one", "two", "and", "with", "was", "they", "she", "he", "it", "a", "to", "in", "on");

    public LevelPlan {
        prompts = List.copyOf(prompts);
        leavers = (BitSet) leavers.clone();
    }

    /** The plan of level {@code concurrency} in {@code round} under {@code options}. */
    public static LevelPlan of(ServeOptions options, int round, int concurrency) {
        int requests = options.requestsAt(concurrency);
        Random random = new Random(mix(options.seed(), round, concurrency));
        String[] prompts = new String[requests];
        for (int i = 0; i < requests; i++) {
            prompts[i] = prompt(random, options.promptWords());
        }
        return new LevelPlan(round, concurrency, List.of(prompts), leavers(requests, options.leaveShare(), random));
    }

    public int requests() {
        return prompts.size();
    }

    /** Whether request {@code i}'s client leaves. */
    public boolean leaves(int i) {
        return leavers.get(i);
    }

    @Override
    public BitSet leavers() {
        return (BitSet) leavers.clone();
    }

    /**
     * The {@code X-Request-Id} of request {@code i} to {@code target} in the bench run {@code run}. The run's token
     * keeps IDs unique across runs: a server remembers the cancels of the last run's leavers for a while (Ripcord's
     * tombstones: {@code ripcord.cancel.tombstone-ttl}), and a rerun that reused their IDs would see those cancels.
     */
    public String requestId(String run, String target, int i) {
        return "serve-" + run + "-" + target + "-r" + round + "-c" + concurrency + "-" + i;
    }

    /** The request index a {@link #requestId} ends with. */
    public static int index(String requestId) {
        return Integer.parseInt(requestId.substring(requestId.lastIndexOf('-') + 1));
    }

    /**
     * The leave schedule: exactly {@code round(share × requests)} of the {@code requests} indices, chosen by a
     * partial Fisher–Yates shuffle drawn from {@code random}.
     */
    static BitSet leavers(int requests, double share, Random random) {
        int leaving = (int) Math.round(share * requests);
        int[] order = new int[requests];
        for (int i = 0; i < requests; i++) {
            order[i] = i;
        }
        BitSet chosen = new BitSet(requests);
        for (int k = 0; k < leaving; k++) {
            int j = k + random.nextInt(requests - k);
            int swap = order[k];
            order[k] = order[j];
            order[j] = swap;
            chosen.set(order[k]);
        }
        return chosen;
    }

    private static String prompt(Random random, ServeOptions.PromptWords length) {
        int words = length.min() + random.nextInt(length.max() - length.min() + 1);
        StringBuilder prompt = new StringBuilder();
        for (int w = 0; w < words; w++) {
            if (w > 0) {
                prompt.append(' ');
            }
            prompt.append(WORDS.get(random.nextInt(WORDS.size())));
        }
        return prompt.toString();
    }

    private static long mix(long seed, int round, int concurrency) {
        long h = seed * 0x9E3779B97F4A7C15L + round;
        h = h * 0xBF58476D1CE4E5B9L + concurrency;
        return h ^ (h >>> 31);
    }
}
