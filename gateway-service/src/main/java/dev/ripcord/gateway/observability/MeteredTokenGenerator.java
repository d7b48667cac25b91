package dev.ripcord.gateway.observability;

import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.TokenGenerator;
import reactor.core.publisher.Flux;

/**
 * The gateway's view of generation speed, measured around the serving core's {@link TokenGenerator} into
 * {@link ServingMetrics}: from the generation's subscription (the request is parsed and tokenized; decode
 * reservation, prefill queueing and compute, and the KV transfer all lie ahead) to its first token
 * ({@code ripcord.time.to.first.token}, which prefill sampled and decode relayed), between tokens
 * ({@code ripcord.inter.token.latency}), the tokens relayed ({@code ripcord.generation.tokens}) and the prompt tokens
 * of generations that got a first token ({@code ripcord.prompt.tokens}); and which generations wait for their first
 * token or are running. Generations that end before a first token (refused, failed, cancelled) record no TTFT.
 * Only counts and timestamps per request; no state outlives the generation.
 */
public final class MeteredTokenGenerator implements TokenGenerator {

    private final TokenGenerator delegate;
    private final ServingMetrics metrics;

    public MeteredTokenGenerator(TokenGenerator delegate, ServingMetrics metrics) {
        this.delegate = delegate;
        this.metrics = metrics;
    }

    @Override
    public Flux<GeneratedToken> generate(GenerationRequest request) {
        return Flux.defer(() -> {
            ServingMetrics.Generation generation = metrics.started(request);
            return delegate.generate(request)
                    .doOnNext(token -> generation.token())
                    .doFinally(signal -> generation.ended());
        });
    }

    /** The generator this one measures. */
    TokenGenerator delegate() {
        return delegate;
    }
}
