package dev.ripcord.gateway.generation;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

import reactor.util.context.ContextView;

/**
 * Wall-clock marks of one request's hops through the gateway, for the gateway bench's per-hop breakdown: when the
 * edge received it, when the serving core sent each leg and heard each worker's events, when the first SSE event
 * left for the client. A client asks for them with the {@value #HEADER} header; the edge then records them in the
 * Reactor context of the generation under {@value #CONTEXT_KEY} and writes them as one SSE comment line before
 * {@code [DONE]} (a comment: every SSE client skips it).
 *
 * <p>Contract: a mark is a name and a time in microseconds since the epoch ({@link #nowMicros()}); the first mark
 * of a name wins (a retried leg keeps its first attempt's marks, a token stream keeps its first token's). A
 * generation run without the header gets {@link #NONE}, whose marks cost a context lookup and nothing else. Marks
 * are wall-clock so that they line up with the workers' journal entries ({@code JournalEntry.atMicros}) on one
 * host; they are figures for a bench, never inputs to a decision.
 */
public final class RequestTimings {

    /** Request header that asks for the marks (any value but {@code false} or {@code 0}). */
    public static final String HEADER = "X-Ripcord-Timing";
    /** Reactor context key of the generation's {@link RequestTimings}. */
    public static final String CONTEXT_KEY = "ripcord.requestTimings";
    /** The SSE comment line's prefix; the marks follow as a JSON object of name to microseconds. */
    public static final String SSE_PREFIX = ": ripcord-timing ";

    /** Records nothing: the timings of a request that did not ask for them. */
    public static final RequestTimings NONE = new RequestTimings(false);

    private final boolean enabled;
    private final Map<String, Long> marks = new LinkedHashMap<>();

    private RequestTimings(boolean enabled) {
        this.enabled = enabled;
    }

    /** Timings that record marks. */
    public static RequestTimings recording() {
        return new RequestTimings(true);
    }

    /** Whether a header value asks for timings ({@code null}, {@code false} and {@code 0} do not). */
    public static boolean asked(String headerValue) {
        return headerValue != null && !headerValue.equalsIgnoreCase("false") && !headerValue.equals("0");
    }

    /** The timings of the generation running under {@code context}, or {@link #NONE}. */
    public static RequestTimings of(ContextView context) {
        return context.getOrDefault(CONTEXT_KEY, NONE);
    }

    public boolean enabled() {
        return enabled;
    }

    /** Marks {@code name} now, unless it was marked before. */
    public void mark(String name) {
        if (enabled) {
            mark(name, nowMicros());
        }
    }

    /** Marks {@code name} at {@code micros}, unless it was marked before. */
    public void mark(String name, long micros) {
        if (enabled) {
            synchronized (marks) {
                marks.putIfAbsent(name, micros);
            }
        }
    }

    /** The marks so far, in the order they were first made. */
    public Map<String, Long> marks() {
        synchronized (marks) {
            return java.util.Collections.unmodifiableMap(new LinkedHashMap<>(marks));
        }
    }

    /** The marks as an SSE comment: {@value #SSE_PREFIX}{@code {"name":micros,...}} and a blank line. */
    public String sseComment() {
        StringBuilder s = new StringBuilder(SSE_PREFIX).append('{');
        synchronized (marks) {
            boolean first = true;
            for (Map.Entry<String, Long> mark : marks.entrySet()) {
                s.append(first ? "" : ",").append('"').append(mark.getKey()).append("\":").append(mark.getValue());
                first = false;
            }
        }
        return s.append("}\n\n").toString();
    }

    /** Now, in microseconds since the epoch (the resolution {@link Instant#now()} has on Linux). */
    public static long nowMicros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }
}
