package dev.ripcord.stack.storm;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The storm's requests, drawn from one seed: the same seed gives the same requests, gateways, prompts, lengths and
 * cancels (what happens to them on a loaded machine still differs from run to run; the checks do not depend on it).
 *
 * @param entries every request, in submission order
 */
record StormPlan(List<Entry> entries) {

    /**
     * Where in a request's life its cancel is aimed. The storm cannot see inside the workers, so the phases before
     * the first token are aimed at by time (a delay after sending, in a range where that phase typically runs on
     * the tiny preset with 16-token chunks); the lifecycle audit is what tells where each one landed.
     */
    enum Phase {
        /** No cancel: the request must complete with the reference text. */
        NONE,
        /** At once, before the workers admit it. */
        QUEUED,
        /** During prefill's chunks (a few milliseconds in). */
        MID_CHUNK,
        /** While prefill pushes KV pages to decode. */
        MID_TRANSFER,
        /** After prefill, before decode adopted the pages. */
        AWAITING_KV,
        /** After a random number of streamed tokens (or, without a stream, a longer delay). */
        DECODING,
        /** After the answer ended: must change nothing. */
        AFTER_COMPLETION
    }

    /** Who cancels. */
    enum Source {
        /** The client closes its connection. */
        DISCONNECT,
        /** {@code POST /v1/requests/{id}/cancel} or {@code DELETE /v1/requests/{id}} at either gateway. */
        EXPLICIT,
        /** A {@code timeout} in the request body that expires at the aimed moment. */
        DEADLINE,
        /** A cancel record published straight to {@code ripcord.cancellations}, as an operator would. */
        OPERATOR
    }

    /**
     * One request.
     *
     * @param id              its request ID
     * @param gateway         the gateway it is sent to (index)
     * @param promptIndex     which of the storm's prompts
     * @param maxTokens       its {@code max_tokens} (EOS ignored)
     * @param stream          streamed or not
     * @param phase           where its cancel is aimed
     * @param source          who cancels (unused when {@code phase} is NONE)
     * @param cancelGateway   the gateway an explicit cancel goes to (index)
     * @param delete          an explicit cancel uses {@code DELETE} rather than {@code POST .../cancel}
     * @param delayMicros     the delay of a time-aimed cancel
     * @param afterTokens     the streamed tokens a DECODING cancel waits for
     */
    record Entry(String id, int gateway, int promptIndex, int maxTokens, boolean stream, Phase phase, Source source,
                 int cancelGateway, boolean delete, long delayMicros, int afterTokens) {
    }

    /** Prompts the storm draws from (byte lengths chosen so chunk and page boundaries fall differently). */
    static final int[] PROMPT_BYTES = {7, 33, 80, 150, 201, 260};
    /** {@code max_tokens} the storm draws from. */
    static final int[] MAX_TOKENS = {4, 16, 48};

    static StormPlan draw(int requests, long seed, int gateways, double cancelShare) {
        SplittableRandom random = new SplittableRandom(seed);
        Phase[] cancelPhases = {Phase.QUEUED, Phase.MID_CHUNK, Phase.MID_TRANSFER, Phase.AWAITING_KV,
                Phase.DECODING, Phase.AFTER_COMPLETION};
        Source[] sources = Source.values();
        List<Entry> entries = new ArrayList<>(requests);
        for (int i = 0; i < requests; i++) {
            int maxTokens = MAX_TOKENS[random.nextInt(MAX_TOKENS.length)];
            boolean stream = random.nextInt(4) != 0;
            Phase phase = random.nextDouble() < cancelShare ? cancelPhases[random.nextInt(cancelPhases.length)]
                    : Phase.NONE;
            long delayMicros = switch (phase) {
                case NONE, QUEUED, AFTER_COMPLETION -> 0;
                case MID_CHUNK -> 500 + random.nextLong(4_000);
                case MID_TRANSFER -> 2_000 + random.nextLong(8_000);
                case AWAITING_KV -> 5_000 + random.nextLong(15_000);
                case DECODING -> 20_000 + random.nextLong(80_000);
            };
            entries.add(new Entry("storm-%d-%06d".formatted(seed, i), random.nextInt(gateways),
                    random.nextInt(PROMPT_BYTES.length), maxTokens, stream, phase,
                    sources[random.nextInt(sources.length)], random.nextInt(gateways), random.nextBoolean(),
                    delayMicros, 1 + random.nextInt(Math.max(1, maxTokens - 1))));
        }
        return new StormPlan(List.copyOf(entries));
    }
}
