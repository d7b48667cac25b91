package dev.ripcord.cancel;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A bench-only switch that breaks one thing on purpose, so that a run of the fault bench
 * ({@code ./ripcord bench faults --sabotage=KIND}) shows that the check meant to catch it does. Never on in
 * production: a service refuses to start with {@value #PROPERTY} set unless the environment variable
 * {@value #BENCH_MARKER} is {@code 1}, which only the local-stack launcher sets, and only when a bench asks it to
 * ({@link #arm}). Each kind breaks one thing, once, in one place of one service; {@link #fire} says whether this
 * is that place's moment.
 */
public enum Sabotage {
    /**
     * Each decode worker keeps one KV page back when it frees a job's pages: the first job whose free took back exactly
     * the pages it reserved (so that the log's count shows it); the page stays taken from the pool.
     */
    KEEP_PAGE("keep-page", "decode"),
    /** Each gateway flips the first output token of the first request (not warm-up traffic) that produces one. */
    FLIP_TOKEN("flip-token", "gateway"),
    /** Each gateway fails the first request (not warm-up traffic) that produces a token: an internal error. */
    ERROR_500("error-500", "gateway"),
    /** The decode workers publish no lifecycle event (their heartbeats still go out). */
    DROP_EVENTS("drop-events", "decode"),
    /**
     * Each decode worker drops one cancel on the floor: the first cancel, from any source, that reaches a job not yet
     * ended is not observed, so the job decodes on to its end (and, since a job's cancel is delivered once, no later
     * cancel stops it either).
     */
    DROP_CANCEL("drop-cancel", "decode"),
    /**
     * Each prefill worker computes one more chunk after an observed cancel: the first cancel observed for a running
     * prompt while none of its chunks was computing lets the prompt's next chunk be computed (and its
     * {@code CHUNK_DONE} logged) before the prompt stops.
     */
    CHUNK_AFTER_CANCEL("chunk-after-cancel", "prefill"),
    /**
     * Each gateway writes two terminal frames for one request: the first streamed request (not warm-up traffic) that
     * reaches its end gets its final frame ({@code [DONE]}, after the usage chunk if asked for) written twice.
     */
    DOUBLE_TERMINAL("double-terminal", "gateway");

    /** The property (system property or Spring property) that names the kind. */
    public static final String PROPERTY = "ripcord.sabotage";
    /** The environment variable the local-stack launcher sets to {@code 1} for a stack a bench started. */
    public static final String BENCH_MARKER = "RIPCORD_BENCH_STACK";

    private static volatile Sabotage armed;

    public final String id;
    /** The service whose instances are started with it ({@code gateway}, {@code prefill}, {@code decode}). */
    public final String service;
    private final AtomicBoolean fired = new AtomicBoolean();

    Sabotage(String id, String service) {
        this.id = id;
        this.service = service;
    }

    /** The kind named {@code id} ({@code keep-page}, ...). */
    public static Sabotage of(String id) {
        return Arrays.stream(values()).filter(s -> s.id.equals(id.strip().toLowerCase(Locale.ROOT))).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown sabotage '" + id + "' (known: "
                        + String.join(", ", Arrays.stream(values()).map(s -> s.id).toList()) + ")"));
    }

    /**
     * Arms the kind {@code property} names (nothing when it is null or blank), if {@code marker} says a bench started
     * this process; else refuses.
     *
     * @throws IllegalStateException when a kind is named without the bench's marker: the process must not start
     */
    public static void arm(String property, String marker) {
        if (property == null || property.isBlank()) {
            return;
        }
        if (!"1".equals(marker)) {
            throw new IllegalStateException(PROPERTY + "=" + property + " is refused: a service may be sabotaged "
                    + "only in a stack the fault bench started (" + BENCH_MARKER + "=1); see docs/operations.md");
        }
        armed = of(property);
    }

    /**
     * Disarms every kind and forgets what fired. For tests (the hooks' tests in the services arm a kind with
     * {@link #arm} and call this after); public since those live in other modules, and safe anywhere: it can only
     * turn sabotage off.
     */
    public static void disarm() {
        armed = null;
        for (Sabotage s : values()) {
            s.fired.set(false);
        }
    }

    /** Whether this kind is armed in this process. */
    public boolean armed() {
        return armed == this;
    }

    /** True once, for the first caller, when this kind is armed: the one time it breaks its thing. */
    public boolean fire() {
        return armed == this && fired.compareAndSet(false, true);
    }
}
