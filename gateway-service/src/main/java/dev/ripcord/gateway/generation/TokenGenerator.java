package dev.ripcord.gateway.generation;

import reactor.core.publisher.Flux;

/**
 * The serving core as the HTTP edge sees it: routes a validated request to prefill and decode and streams the
 * generated tokens back. Implemented in {@code serving}; called by the OpenAI edge.
 *
 * <p>Contract:
 * <ul>
 *   <li>Nothing happens until the returned Flux is subscribed; each subscription is one generation.</li>
 *   <li>Tokens arrive in order; the last one carries a non-null {@link GeneratedToken#finishReason()} and the Flux
 *       completes right after it. Completing without such a token is a contract violation (reported as a 500).</li>
 *   <li>Cancelling the subscription (the client went away, or a stop string matched at the gateway) must cancel
 *       the request everywhere: prefill, KV transfer and decode. Why it was cancelled is in the Reactor context:
 *       {@link CancelCause#of} ({@code CLIENT_DISCONNECT} unless the edge recorded another reason, such as
 *       {@code CLIENT_STALLED} for a streaming client that stopped reading).</li>
 *   <li>Failures the client should see are {@link GenerationException}s (cancelled, deadline exceeded, no worker
 *       available with a retry-after, worker failed, duplicate ID); the HTTP edge maps each kind to its error, and
 *       anything else becomes a 500 that reveals nothing. An error before the first token becomes the HTTP status; a
 *       later one ends a stream with an error event.</li>
 *   <li>Must not block the calling thread (the caller may be an event-loop thread).</li>
 * </ul>
 */
@FunctionalInterface
public interface TokenGenerator {

    /** Starts a generation lazily, on subscription. */
    Flux<GeneratedToken> generate(GenerationRequest request);

    /**
     * The {@link GenerationRequest#n()} choices of one request: one inner Flux per choice, in choice order, each
     * under the contract of {@link #generate} for its own tokens. Cancelling one inner Flux stops that choice only
     * (a stop string matched in it); cancelling the outer one, or cancelling the request by its ID, stops them all.
     * The outer Flux completes once every inner one has ended; the caller must subscribe to each inner Flux as it
     * is emitted (a {@code flatMap} with concurrency {@code n}). A choice that fails fails the request: the caller's
     * merge ends with its error, and the cancel of the outer Flux that follows stops the other choices.
     *
     * <p>This default runs {@code n} independent generations of {@code request} itself, sharing nothing: enough
     * for generators without a lifecycle (test doubles). The serving core overrides it so that the choices share
     * the request's context and sample with their own seeds.
     */
    default Flux<Flux<GeneratedToken>> generateChoices(GenerationRequest request) {
        return Flux.range(0, request.n()).map(i -> generate(request));
    }
}
