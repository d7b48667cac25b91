package dev.ripcord.gateway.observability;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.WarmUp;
import dev.ripcord.gateway.generation.TokenGenerator;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import reactor.core.publisher.Flux;

/**
 * The gateway's view of generation speed, measured around the serving core's {@link TokenGenerator} into
 * {@link ServingMetrics}: from the generation's subscription (the request is parsed and tokenized; decode
 * reservation, prefill queueing and compute, and the KV transfer all lie ahead) to its first token
 * ({@code ripcord.time.to.first.token}, which prefill sampled and decode relayed), between tokens
 * ({@code ripcord.inter.token.latency}), the tokens relayed ({@code ripcord.generation.tokens}) and the prompt tokens
 * of generations that got a first token ({@code ripcord.prompt.tokens}); and which generations wait for their first
 * token or are running. Generations that end before a first token (refused, failed, cancelled) record no TTFT.
 * Each choice of an {@code n > 1} request is measured as a generation of its own.
 * <p>
 * {@code ripcord.gateway.user.requests} (counter, tag {@code user_group}): requests by the OpenAI {@code user} field,
 * hashed into a fixed set of groups ({@link UserGroups}) so the tag's cardinality stays bounded whatever clients send.
 * Only counts and timestamps per request; no state outlives the generation.
 */
public final class MeteredTokenGenerator implements TokenGenerator {

    private final TokenGenerator delegate;
    private final ServingMetrics metrics;
    private final MeterRegistry meters;
    private final Map<String, Counter> users = new ConcurrentHashMap<>();

    public MeteredTokenGenerator(TokenGenerator delegate, ServingMetrics metrics, MeterRegistry meters) {
        this.delegate = delegate;
        this.metrics = metrics;
        this.meters = meters;
    }

    /** A warm-up request ({@link WarmUp}) is served unmeasured. */
    @Override
    public Flux<GeneratedToken> generate(GenerationRequest request) {
        return Flux.deferContextual(view -> {
            if (WarmUp.marked(view)) {
                return delegate.generate(request);
            }
            countUser(request);
            return metered(request, delegate.generate(request));
        });
    }

    /** Each choice is measured as a generation of its own (its own first token, its own tokens). */
    @Override
    public Flux<Flux<GeneratedToken>> generateChoices(GenerationRequest request) {
        return Flux.deferContextual(view -> {
            if (WarmUp.marked(view)) {
                return delegate.generateChoices(request);
            }
            countUser(request);
            return delegate.generateChoices(request).map(choice -> metered(request, choice));
        });
    }

    private void countUser(GenerationRequest request) {
        users.computeIfAbsent(UserGroups.of(request.user()), group -> Counter.builder("ripcord.gateway.user.requests")
                .description("requests by end-user group: the OpenAI 'user' field hashed into "
                        + UserGroups.GROUPS + " groups, or none")
                .tag("user_group", group)
                .register(meters)).increment();
    }

    private Flux<GeneratedToken> metered(GenerationRequest request, Flux<GeneratedToken> generation) {
        return Flux.defer(() -> {
            ServingMetrics.Generation measured = metrics.started(request);
            return generation
                    .doOnNext(token -> measured.token())
                    .doFinally(signal -> measured.ended());
        });
    }

    /** The generator this one measures. */
    TokenGenerator delegate() {
        return delegate;
    }
}
