package dev.ripcord.gateway.auth;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.ripcord.gateway.generation.RequestCancelledException;
import dev.ripcord.gateway.lifecycle.RequestContext;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.generation.CancelCause;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.TokenGenerator;
import dev.ripcord.protocol.RequestIds;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/**
 * Stands in for the serving core the way it treats ownership: opens the request's context owned by the caller's
 * identity from the Reactor context, links the generation to it, and closes it at the end. Each request's tokens
 * come from a sink the test drives ({@link #tokens}), so a request stays in flight until the test says otherwise; each
 * token is counted on the context, as the serving core does. Ends a cancelled request with
 * {@link RequestCancelledException}, as the serving core does.
 */
public final class ScriptedGenerator implements TokenGenerator {

    private final RequestContexts contexts;
    private final Map<String, Sinks.Many<GeneratedToken>> sinks = new ConcurrentHashMap<>();
    /** The owner identity each generation saw in its Reactor context, in order. */
    final List<String> owners = new CopyOnWriteArrayList<>();
    /** The request ID each generation saw in its Reactor context ({@link RequestIds#CONTEXT_KEY}), in order. */
    final List<String> contextRequestIds = new CopyOnWriteArrayList<>();

    ScriptedGenerator(RequestContexts contexts) {
        this.contexts = contexts;
    }

    /** The sink of request {@code requestId}'s tokens (created on first use, by the test or the request). */
    public Sinks.Many<GeneratedToken> tokens(String requestId) {
        return sinks.computeIfAbsent(requestId, id -> Sinks.many().unicast().onBackpressureBuffer());
    }

    /** Finishes request {@code requestId} with one token. */
    public void finish(String requestId) {
        Sinks.Many<GeneratedToken> sink = tokens(requestId);
        sink.tryEmitNext(new GeneratedToken(0, 'k', GeneratedToken.LENGTH));
        sink.tryEmitComplete();
    }

    @Override
    public Flux<GeneratedToken> generate(GenerationRequest request) {
        return Flux.deferContextual(view -> {
            String owner = ApiKeys.identity(view);
            owners.add(owner);
            contextRequestIds.add(view.getOrDefault(RequestIds.CONTEXT_KEY, "<none>"));
            RequestContext ctx = contexts.open(request.requestId(), owner, null, request.model(),
                    request.promptTokens().length);
            return ctx.link(tokens(request.requestId()).asFlux())
                    .doOnNext(token -> ctx.tokenRelayed(token.finishReason())) // as the serving core counts them
                    .concatWith(Flux.defer(() -> ctx.cancelReason() == null ? Flux.empty()
                            : Flux.error(RequestCancelledException.of(request.requestId(), ctx.cancelReason()))))
                    // Cancelled from downstream, as the serving core treats it: a stop string's finish, then the cancel.
                    .doOnCancel(() -> {
                        String finish = CancelCause.finishOf(view);
                        if (finish != null) {
                            ctx.finishedAtTheEdge(finish);
                        }
                        contexts.cancel(ctx, CancelCause.of(view));
                    })
                    .doFinally(signal -> {
                        contexts.close(ctx);
                        sinks.remove(request.requestId());
                    });
        });
    }
}
