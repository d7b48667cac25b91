package dev.ripcord.gateway.generation;

import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.util.context.ContextView;

/**
 * When a generation's workers have all taken it on: from then on it is computed, and whatever still goes wrong
 * (a worker failing, the deadline) is told in the answer, not by refusing it.
 *
 * <p>The streaming edge sends the response's status and headers at that moment rather than with the first token, as
 * OpenAI's API and llama-server do, so that a client has read them while the prompt is computed: its time to first
 * token then holds the prompt's computation once, not the prompt's and then the headers' handling. Refusals (no
 * worker, a full queue, a limit) still come before it, as statuses with {@code Retry-After} where they have one.
 *
 * <p>The serving core finds it in the Reactor context under {@value #CONTEXT_KEY} and calls {@link #admitted};
 * without one in the context (non-streaming answers), that is a no-op.
 */
public final class Admission {

    /** Reactor context key of the generation's {@link Admission}. */
    public static final String CONTEXT_KEY = "ripcord.admission";

    private final Sinks.One<Boolean> admitted = Sinks.one();

    /** Records that the generation running under {@code context} was admitted by every worker it needs. */
    public static void admitted(ContextView context) {
        Admission admission = context.getOrDefault(CONTEXT_KEY, null);
        if (admission != null) {
            admission.admitted.tryEmitValue(Boolean.TRUE);
        }
    }

    /** Ends this admission unadmitted if it was not admitted yet (the generation ended first). */
    public void ended() {
        admitted.tryEmitEmpty();
    }

    /** Emits once when admitted; completes empty if the generation ended first. */
    public Mono<Boolean> whenAdmitted() {
        return admitted.asMono();
    }
}
