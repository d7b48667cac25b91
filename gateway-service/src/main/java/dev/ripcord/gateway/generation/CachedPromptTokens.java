package dev.ripcord.gateway.generation;

import java.util.concurrent.atomic.AtomicInteger;

import reactor.util.context.ContextView;

/**
 * How many of a request's prompt tokens the prefill worker took from its prefix cache instead of computing them:
 * OpenAI's {@code usage.prompt_tokens_details.cached_tokens}. The endpoint puts one in the Reactor context under
 * {@link #CONTEXT_KEY}; the serving core fills it at prefill's {@code DONE}; the endpoint reads it when it writes
 * the usage, which follows the last token. With several choices (several prefills of one prompt) it keeps the
 * fewest: the tokens every one of them reused. Thread-safe.
 */
public final class CachedPromptTokens {

    /** The Reactor context key the endpoint puts its holder under. */
    public static final String CONTEXT_KEY = "ripcord.cachedPromptTokens";

    private final AtomicInteger tokens = new AtomicInteger(-1);

    /** A prefill reported {@code cached} tokens from its worker's cache. */
    public void record(int cached) {
        tokens.accumulateAndGet(Math.max(0, cached), (old, now) -> old < 0 ? now : Math.min(old, now));
    }

    /** The cached prompt tokens, 0 until a prefill said. */
    public int tokens() {
        return Math.max(0, tokens.get());
    }

    /** The holder in {@code context}, or a throwaway one where the endpoint put none. */
    public static CachedPromptTokens of(ContextView context) {
        return context.getOrDefault(CONTEXT_KEY, new CachedPromptTokens());
    }
}
