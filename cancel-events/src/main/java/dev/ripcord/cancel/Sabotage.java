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
    /** A decode worker drops the first cancel it receives for a running job on the floor. */
    DROP_CANCEL("drop-cancel"),
    /** A decode worker keeps one KV page back when it frees a job's pages (and logs the free as whole). */
    KEEP_PAGE("keep-page"),
    /** A prefill worker computes (and logs) one chunk after it observed a cancel. */
    CHUNK_AFTER_CANCEL("chunk-after-cancel"),
    /** A gateway writes a second terminal frame for one request. */
    DOUBLE_TERMINAL("double-terminal"),
    /** A gateway flips one output token of one completed request. */
    FLIP_TOKEN("flip-token"),
    /** A gateway answers one admitted request with a 500. */
    ERROR_500("error-500"),
    /** One decode worker publishes no lifecycle event at all. */
    DROP_EVENTS("drop-events");

    /** The property (system property or Spring property) that names the kind. */
    public static final String PROPERTY = "ripcord.sabotage";
    /** The environment variable the local-stack launcher sets to {@code 1} for a stack a bench started. */
    public static final String BENCH_MARKER = "RIPCORD_BENCH_STACK";

    private static volatile Sabotage armed;

    public final String id;
    private final AtomicBoolean fired = new AtomicBoolean();

    Sabotage(String id) {
        this.id = id;
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

    /** Whether this kind is armed in this process. */
    public boolean armed() {
        return armed == this;
    }

    /** True once, for the first caller, when this kind is armed: the one time it breaks its thing. */
    public boolean fire() {
        return armed == this && fired.compareAndSet(false, true);
    }
}
