package dev.ripcord.gateway.observability;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.TokenGenerator;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import reactor.core.publisher.Flux;

/**
 * The gateway's view of generation speed, measured around the serving core's {@link TokenGenerator}:
 * <ul>
 *   <li>{@code ripcord.gateway.ttft} (timer, histogram): from the generation's subscription (the request is parsed
 *       and tokenized; decode reservation, prefill queueing and compute, and the KV transfer all lie ahead) to its
 *       first token, which prefill sampled and decode relayed. Generations that end before a first token (refused,
 *       failed, cancelled) are not recorded.</li>
 *   <li>{@code ripcord.gateway.tokens} (counter): tokens relayed to clients; its rate is the gateway's tokens/s.</li>
 *   <li>{@code ripcord.gateway.user.requests} (counter, tag {@code user_group}): requests by the OpenAI
 *       {@code user} field, hashed into a fixed set of groups ({@link UserGroups}) so the tag's cardinality stays
 *       bounded whatever clients send.</li>
 * </ul>
 * Only counts and one timestamp per request; no state outlives the generation.
 */
public final class MeteredTokenGenerator implements TokenGenerator {

    private final TokenGenerator delegate;
    private final Timer timeToFirstToken;
    private final Counter tokens;
    private final MeterRegistry meters;
    private final Map<String, Counter> users = new ConcurrentHashMap<>();

    public MeteredTokenGenerator(TokenGenerator delegate, MeterRegistry meters) {
        this.delegate = delegate;
        this.meters = meters;
        this.timeToFirstToken = Timer.builder("ripcord.gateway.ttft")
                .description("time to first token: generation started -> first token relayed")
                .publishPercentileHistogram()
                .register(meters);
        this.tokens = Counter.builder("ripcord.gateway.tokens")
                .description("tokens relayed to clients")
                .baseUnit("tokens")
                .register(meters);
    }

    @Override
    public Flux<GeneratedToken> generate(GenerationRequest request) {
        countUser(request);
        return metered(delegate.generate(request));
    }

    /** Each choice is measured as a generation of its own (its own first token, its own tokens). */
    @Override
    public Flux<Flux<GeneratedToken>> generateChoices(GenerationRequest request) {
        countUser(request);
        return delegate.generateChoices(request).map(this::metered);
    }

    private void countUser(GenerationRequest request) {
        users.computeIfAbsent(UserGroups.of(request.user()), group -> Counter.builder("ripcord.gateway.user.requests")
                .description("requests by end-user group: the OpenAI 'user' field hashed into "
                        + UserGroups.GROUPS + " groups, or none")
                .tag("user_group", group)
                .register(meters)).increment();
    }

    private Flux<GeneratedToken> metered(Flux<GeneratedToken> generation) {
        return Flux.defer(() -> {
            long started = System.nanoTime();
            AtomicBoolean first = new AtomicBoolean(true);
            return generation.doOnNext(token -> {
                if (first.getAndSet(false)) {
                    timeToFirstToken.record(System.nanoTime() - started, TimeUnit.NANOSECONDS);
                }
                tokens.increment();
            });
        });
    }

    /** The generator this one measures. */
    TokenGenerator delegate() {
        return delegate;
    }
}
