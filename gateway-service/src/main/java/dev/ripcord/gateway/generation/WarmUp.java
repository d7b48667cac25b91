package dev.ripcord.gateway.generation;

import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * Warm-up traffic: the requests {@code ./ripcord up} sends through the gateway before it says it is up, each marked
 * with the {@value #HEADER} header. A marked request is served like any other, and kept out of what the user counts:
 * the serving metrics ({@code observability.ServingMetrics}, {@code ripcord.gateway.user.requests}) do not record
 * it, and its lifecycle log {@code ADMITTED} event carries {@code detail} {@code warm-up}, which the audit leaves out
 * of its request counts. The workers' own metrics (queue, batch, engine) do count it: they know nothing of the
 * header.
 *
 * <p>{@code observability.WarmUpFilter} writes the mark into the Reactor context of the exchange ({@link #mark}),
 * where {@link #marked} reads it. That filter is registered only where {@value #ENABLED} is {@code true} (the local
 * stack sets it for its own warm-up): elsewhere the header means nothing, so no client can keep its traffic out of
 * an operator's figures.
 */
public final class WarmUp {

    /** The header the warm-up sends ({@code X-Ripcord-Warm-Up: 1}). */
    public static final String HEADER = "X-Ripcord-Warm-Up";

    /** The property that makes the gateway honour {@link #HEADER}. */
    public static final String ENABLED = "ripcord.gateway.warm-up-header";

    private static final String CONTEXT_KEY = WarmUp.class.getName();

    private WarmUp() {
    }

    /** Whether the request whose Reactor context this is was marked as warm-up traffic. */
    public static boolean marked(ContextView view) {
        return view.getOrDefault(CONTEXT_KEY, Boolean.FALSE);
    }

    /** The context entry that marks a request as warm-up traffic. */
    public static Context mark() {
        return Context.of(CONTEXT_KEY, Boolean.TRUE);
    }
}
