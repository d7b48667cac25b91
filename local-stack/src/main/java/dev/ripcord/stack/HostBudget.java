package dev.ripcord.stack;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What a stack that runs every service on one host gives each service JVM: a heap that returns what it does not
 * use, capped native-allocator arenas, and a share of the CPUs for each worker's compute threads.
 *
 * <p>Design note. A JVM's defaults assume it has the machine to itself: a G1 heap of up to a quarter of the RAM that
 * it grows and keeps, a malloc arena per core for its compiler and I/O threads, and (for an inference engine) a
 * compute thread per core. Four such JVMs on one host hold two gigabytes while idle and, when prefill and decode
 * both compute, run four busy threads on two cores, where a parallel region waits for its slowest worker and a
 * descheduled worker costs a whole scheduler slice. So a co-located stack gives each service:
 * <ul>
 *   <li>the serial collector with a fixed small young generation and a heap that shrinks after a full collection
 *       ({@code MaxHeapFreeRatio}): on a few hundred megabytes of heap its pauses are a few milliseconds, and it
 *       has no per-region bookkeeping to keep resident;</li>
 *   <li>{@value #HEAP_MAX} of heap at most (a service's live set is 40–60 MB idle; request state is small), with
 *       compact object headers;</li>
 *   <li>glibc's malloc arenas capped at two ({@code MALLOC_ARENA_MAX}) and freed native memory trimmed back to the
 *       OS every few seconds ({@code TrimNativeHeapInterval});</li>
 *   <li>engine compute threads ({@code ripcord.engine.threads}): the host's processors split evenly over the worker
 *       processes, at least one each, so prefill and decode never together run more compute threads than there are
 *       processors.</li>
 * </ul>
 * The off-heap budgets are the workers' own properties (the KV pool's {@code ripcord.engine.kv-memory}, resident
 * only as pages are used; the model's weights). A flag or property given on the command line wins over these.
 */
final class HostBudget {

    /** The most heap a service may use. */
    static final String HEAP_MAX = "256m";

    /** The JVM flags every service gets, before the user's own {@code --jvm-flag}s (a later flag wins). */
    static final List<String> JVM_FLAGS = List.of(
            "-XX:+UseSerialGC",
            "-Xms32m",
            "-Xmx" + HEAP_MAX,
            "-Xmn8m",
            "-XX:MinHeapFreeRatio=10",
            "-XX:MaxHeapFreeRatio=30",
            "-XX:TrimNativeHeapInterval=5000",
            "-XX:+UseCompactObjectHeaders");

    /** The environment every service gets (a value the launcher's own environment sets wins). */
    static final Map<String, String> ENVIRONMENT = Map.of("MALLOC_ARENA_MAX", "2");

    /** The property a worker's compute thread count is given by. */
    static final String ENGINE_THREADS = "ripcord.engine.threads";

    private HostBudget() {
    }

    /**
     * Compute threads per worker process when {@code workers} worker processes share {@code processors}
     * processors: an even split, at least one.
     */
    static int engineThreads(int processors, int workers) {
        if (processors < 1 || workers < 1) {
            throw new IllegalArgumentException("processors and workers must be >= 1, got " + processors + " and "
                    + workers);
        }
        return Math.max(1, processors / workers);
    }

    /**
     * The arguments a worker of {@code role} gets for its compute threads, unless the stack's properties already
     * set {@value #ENGINE_THREADS}: none for a gateway.
     */
    static List<String> workerArguments(Role role, StackOptions options, int processors) {
        List<String> args = new ArrayList<>();
        if (role != Role.GATEWAY && !options.properties().containsKey(ENGINE_THREADS)) {
            int workers = options.ports(Role.PREFILL).size() + options.ports(Role.DECODE).size();
            args.add("--" + ENGINE_THREADS + "=" + engineThreads(processors, workers));
        }
        return args;
    }
}
