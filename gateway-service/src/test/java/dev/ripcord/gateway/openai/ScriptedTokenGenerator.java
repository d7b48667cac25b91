package dev.ripcord.gateway.openai;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import dev.ripcord.gateway.generation.ByteTextCodec;
import dev.ripcord.gateway.generation.CancelCause;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.TokenGenerator;
import dev.ripcord.protocol.RequestIds;
import reactor.core.publisher.Flux;

import dev.ripcord.protocol.CancelReason;

/**
 * A {@link TokenGenerator} that replays a script per request: tokens, optionally delayed, optionally followed by an
 * error or by silence. It records every request, the {@code requestId} it saw in the Reactor context, and how often
 * a generation was cancelled (and why) or completed.
 */
public final class ScriptedTokenGenerator implements TokenGenerator {

    private volatile Function<GenerationRequest, Flux<GeneratedToken>> script = request -> Flux.empty();
    private final List<GenerationRequest> requests = new CopyOnWriteArrayList<>();
    private final List<String> contextRequestIds = new CopyOnWriteArrayList<>();
    private final AtomicInteger subscriptions = new AtomicInteger();
    private final AtomicInteger cancellations = new AtomicInteger();
    private final AtomicInteger completions = new AtomicInteger();
    private final List<CancelReason> cancelReasons = new CopyOnWriteArrayList<>();
    /** What the scripted prefill reports its worker's prefix cache served, as a real one does at its DONE. */
    private volatile int cachedPromptTokens;
    /** Where generations open their request contexts, as the serving core does; null: none opened. */
    private volatile dev.ripcord.gateway.lifecycle.RequestContexts contexts;

    @Override
    public Flux<GeneratedToken> generate(GenerationRequest request) {
        requests.add(request);
        return Flux.deferContextual(context -> {
                    contextRequestIds.add(context.getOrDefault(RequestIds.CONTEXT_KEY, "<none>"));
                    dev.ripcord.gateway.lifecycle.RequestContexts recording = contexts;
                    if (recording != null) {
                        // As the serving core does: a context per request, the endpoint's terminal frames bound to it.
                        dev.ripcord.gateway.lifecycle.RequestContext ctx = recording.open(request.requestId(),
                                Duration.ofHours(1));
                        recording.recordTerminalFrames(ctx,
                                dev.ripcord.gateway.generation.TerminalFrames.of(context));
                        return script.apply(request).doOnCancel(() -> cancelReasons.add(CancelCause.of(context)))
                                .doFinally(signal -> recording.close(ctx));
                    }
                    dev.ripcord.gateway.generation.CachedPromptTokens.of(context).record(cachedPromptTokens);
                    return script.apply(request).doOnCancel(() -> cancelReasons.add(CancelCause.of(context)));
                })
                .doOnSubscribe(s -> subscriptions.incrementAndGet())
                .doOnCancel(cancellations::incrementAndGet)
                .doOnComplete(completions::incrementAndGet);
    }

    void reset() {
        script = request -> Flux.empty();
        requests.clear();
        contextRequestIds.clear();
        subscriptions.set(0);
        cancellations.set(0);
        completions.set(0);
        cancelReasons.clear();
        cachedPromptTokens = 0;
        contexts = null;
    }

    /**
     * Every generation opens its request's context in {@code contexts} (closed when it ends) and binds the endpoint's
     * terminal frames to it, as the serving core does: the lifecycle log of {@code contexts} then shows them.
     */
    void recordOn(dev.ripcord.gateway.lifecycle.RequestContexts contexts) {
        this.contexts = contexts;
    }

    /** Every request's prefill reports {@code tokens} prompt tokens served from the prefix cache. */
    void cachedPromptTokens(int tokens) {
        this.cachedPromptTokens = tokens;
    }

    /** Every request replays {@code tokens}. */
    void replay(List<GeneratedToken> tokens) {
        script = request -> Flux.fromIterable(tokens);
    }

    /** Every request replays {@code tokens}, one every {@code delay}. */
    void replay(List<GeneratedToken> tokens, Duration delay) {
        script = request -> Flux.fromIterable(tokens).delayElements(delay);
    }

    /** Every request replays {@code tokens}, then never finishes: only a cancel ends it. */
    void replayThenHang(List<GeneratedToken> tokens) {
        script = request -> Flux.concat(Flux.fromIterable(tokens), Flux.never());
    }

    /** Every request replays {@code tokens}, then fails with {@code error}. */
    void replayThenFail(List<GeneratedToken> tokens, Throwable error) {
        script = request -> Flux.concat(Flux.fromIterable(tokens), Flux.error(error));
    }

    void script(Function<GenerationRequest, Flux<GeneratedToken>> script) {
        this.script = script;
    }

    List<GenerationRequest> requests() {
        return requests;
    }

    GenerationRequest lastRequest() {
        return requests.getLast();
    }

    List<String> contextRequestIds() {
        return contextRequestIds;
    }

    int subscriptions() {
        return subscriptions.get();
    }

    int cancellations() {
        return cancellations.get();
    }

    /** Why each cancelled generation was cancelled, as {@link CancelCause} told it at the cancel. */
    List<CancelReason> cancelReasons() {
        return cancelReasons;
    }

    int completions() {
        return completions.get();
    }

    /** The bytes of {@code text} as tokens, the last one carrying {@code finishReason}. */
    public static List<GeneratedToken> tokens(String text, String finishReason) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        List<GeneratedToken> tokens = new ArrayList<>(bytes.length);
        for (int i = 0; i < bytes.length; i++) {
            tokens.add(new GeneratedToken(i, bytes[i] & 0xFF, i == bytes.length - 1 ? finishReason : null));
        }
        return tokens;
    }

    /** The bytes of {@code text} as tokens, then EOS (finish reason {@code stop}). */
    public static List<GeneratedToken> tokensThenEos(String text) {
        List<GeneratedToken> tokens = new ArrayList<>(tokens(text, null));
        tokens.add(new GeneratedToken(tokens.size(), ByteTextCodec.EOS, GeneratedToken.STOP));
        return tokens;
    }

    /** The bytes of {@code text} as tokens, none of them last. */
    public static List<GeneratedToken> unfinished(String text) {
        return tokens(text, null);
    }
}
