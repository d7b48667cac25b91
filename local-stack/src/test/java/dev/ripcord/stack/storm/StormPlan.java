package dev.ripcord.stack.storm;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The storm's requests, drawn from one seed: the same seed gives the same requests, gateways, prompts, lengths and
 * cancels (what happens to them on a loaded machine still differs from run to run; the checks do not depend on it).
 *
 * <p>Two API keys share the storm, and reuse its IDs: a share of requests are sent again under their ID once they
 * ended (right after a cancel included), and a share have a twin, a request of the other key under the same ID at the
 * same time. A request is one key's use of an ID once, so a reuse or a twin is only ever cancelled by its own cancel.
 *
 * @param entries every request, in submission order (a twin right after the request whose ID it shares)
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
     * @param tenant          the API key it is sent with: 0 the stack's own, 1 {@code TestStacks.SECOND_API_KEY}
     * @param reuse           once it has ended (and its explicit cancel, if any, was answered), the same client
     *                        sends it again under the same ID and key, uncancelled: that one must complete
     */
    record Entry(String id, int gateway, int promptIndex, int maxTokens, boolean stream, Phase phase, Source source,
                 int cancelGateway, boolean delete, long delayMicros, int afterTokens, int tenant, boolean reuse) {

        /** A twin: this request's ID, sent at the same time with the other key (a request of its own). */
        Entry twin(int gateway, Phase phase, Source source, boolean reuse) {
            return new Entry(id, gateway, promptIndex, maxTokens, stream, phase, source, cancelGateway, delete,
                    delayMicros, afterTokens, 1 - tenant, reuse);
        }
    }

    /** The share of requests sent again under their ID once they ended. */
    static final double REUSE_SHARE = 0.2;
    /** The share of requests whose ID the other key sends at the same time, with a cancel of its own or none. */
    static final double TWIN_SHARE = 0.2;

    /** Prompts the storm draws from (byte lengths chosen so chunk and page boundaries fall differently). */
    static final int[] PROMPT_BYTES = {7, 33, 80, 150, 201, 260};
    /** {@code max_tokens} the storm draws from. */
    static final int[] MAX_TOKENS = {4, 16, 48};

    static StormPlan draw(int requests, long seed, int gateways, double cancelShare) {
        SplittableRandom random = new SplittableRandom(seed);
        Phase[] cancelPhases = {Phase.QUEUED, Phase.MID_CHUNK, Phase.MID_TRANSFER, Phase.AWAITING_KV,
                Phase.DECODING, Phase.AFTER_COMPLETION};
        Source[] sources = Source.values();
        // Keys, reuses and twins come from a stream of their own, so that a seed draws the same requests, phases
        // and sources as it does without them.
        SplittableRandom identities = new SplittableRandom(seed ^ 0x5eed_1d5L);
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
            Entry entry = new Entry("storm-%d-%06d".formatted(seed, i), random.nextInt(gateways),
                    random.nextInt(PROMPT_BYTES.length), maxTokens, stream, phase,
                    sources[random.nextInt(sources.length)], random.nextInt(gateways), random.nextBoolean(),
                    delayMicros, 1 + random.nextInt(Math.max(1, maxTokens - 1)), identities.nextInt(2),
                    identities.nextDouble() < REUSE_SHARE);
            entries.add(entry);
            if (identities.nextDouble() < TWIN_SHARE) {
                // Cancelled half of the time (the other key's cancel of the same ID must not reach the first), and
                // sent again sometimes too: both keys then reuse the ID at about the same time.
                Phase twinPhase = identities.nextBoolean() ? Phase.NONE : cancelPhases[identities.nextInt(
                        cancelPhases.length)];
                entries.add(entry.twin(identities.nextInt(gateways), twinPhase,
                        sources[identities.nextInt(sources.length)], identities.nextDouble() < REUSE_SHARE));
            }
        }
        return new StormPlan(List.copyOf(entries));
    }
}
