package dev.ripcord.gateway.openai;

import reactor.core.publisher.Flux;

/**
 * The serving core as the OpenAI surface sees it: routes a validated request to prefill and decode and streams the
 * generated tokens back. Implemented outside this package; this package only calls it.
 *
 * <p>Contract:
 * <ul>
 *   <li>Nothing happens until the returned Flux is subscribed; each subscription is one generation.</li>
 *   <li>Tokens arrive in order; the last one carries a non-null {@link GeneratedToken#finishReason()} and the Flux
 *       completes right after it. Completing without such a token is a contract violation (reported as a 500).</li>
 *   <li>Cancelling the subscription (the client went away, or a stop string matched at the gateway) must cancel
 *       the request everywhere: prefill, KV transfer and decode. Why it was cancelled is in the Reactor context:
 *       {@link CancelCause#of} ({@code CLIENT_DISCONNECT} unless this package recorded another reason, such as
 *       {@code CLIENT_STALLED} for a streaming client that stopped reading).</li>
 *   <li>Failures the client should see are {@link ApiException}s, e.g.
 *       {@code ApiException.of(ErrorCode.SERVICE_UNAVAILABLE, ...).withRetryAfter(...)}; anything else becomes an
 *       OpenAI 500 body. An error before the first token becomes the HTTP status; a later one ends a stream with
 *       an error event.</li>
 *   <li>Must not block the calling thread (the caller may be an event-loop thread).</li>
 * </ul>
 */
@FunctionalInterface
public interface TokenGenerator {

    /** Starts a generation lazily, on subscription. */
    Flux<GeneratedToken> generate(GenerationRequest request);
}
