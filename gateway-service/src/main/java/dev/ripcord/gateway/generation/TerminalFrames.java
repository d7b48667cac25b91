package dev.ripcord.gateway.generation;

import java.util.function.Consumer;

import reactor.util.context.ContextView;

/**
 * The terminal frames the endpoint writes to a request's client, as evidence for the lifecycle log: a stream's
 * {@code [DONE]} (after an error event or not), a non-streamed answer's body. The endpoint puts one in the Reactor
 * context under {@link #CONTEXT_KEY} and calls {@link #written} from the code that writes each such frame, once per
 * frame; the serving core {@linkplain #bind binds} it, once it has opened the request's context, to what records a
 * {@code TERMINAL_FRAME} under the request's internal ID. A frame written before that (or with no serving core that
 * binds, as in tests) is not recorded. So two frames written for one request log two events, whatever the request's
 * one {@code FINISHED} says, and the audit sees them. Thread-safe.
 */
public final class TerminalFrames {

    /** The Reactor context key the endpoint puts its holder under. */
    public static final String CONTEXT_KEY = "ripcord.terminalFrames";

    /** A stream's {@code [DONE]}, after an error event or not. */
    public static final String DONE = "done";
    /** A non-streamed answer's body. */
    public static final String BODY = "body";

    private volatile Consumer<String> recorder;

    /** The serving core opened the request's context: each frame written from now on goes to {@code recorder}. */
    public void bind(Consumer<String> recorder) {
        this.recorder = recorder;
    }

    /** The endpoint wrote one terminal frame of {@code kind} ({@link #DONE}, {@link #BODY}) to the client. */
    public void written(String kind) {
        Consumer<String> bound = recorder;
        if (bound != null) {
            bound.accept(kind);
        }
    }

    /** The holder in {@code context}, or a throwaway one where the endpoint put none. */
    public static TerminalFrames of(ContextView context) {
        return context.getOrDefault(CONTEXT_KEY, new TerminalFrames());
    }
}
