package dev.ripcord.stack;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.ripcord.model.ModelStore;

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
 *       processors;</li>
 *   <li>a decode batch sized to those threads ({@code ripcord.decode.max-batch}, {@value #DECODE_BATCH_PER_THREAD}
 *       per thread): a step that a thread finishes in milliseconds, rather than a batch whose steps stretch every
 *       stream's inter-token gap while the cores are also relaying its tokens;</li>
 *   <li>a JIT policy for a request path that runs thousands of distinct methods a few times per request
 *       ({@link #jitFlags}): C2 only where it pays, for the engine's kernels, and the client compiler for the rest,
 *       compiling after a twentieth of the usual invocations.</li>
 * </ul>
 * The off-heap budgets are the workers' own properties (the KV pool's {@code ripcord.engine.kv-memory}, resident
 * only as pages are used; the model's weights). A flag or property given on the command line wins over these.
 */
final class HostBudget {

    /** The most heap a service may use on a host of less than {@value #LARGE_MEMORY_GIB} GiB. */
    static final String HEAP_MAX = "256m";

    /** The most heap a service may use on a host of {@value #LARGE_MEMORY_GIB} GiB or more: room to spare. */
    static final String LARGE_HEAP_MAX = "512m";

    /** From this much memory (GiB) a host is large: each service may grow its heap to {@link #LARGE_HEAP_MAX}. */
    static final int LARGE_MEMORY_GIB = 16;

    /**
     * From this many processors a gateway keeps C2: its compilations then run on processors the workers' compute
     * threads leave over, and pay back over a long run; below, on a laptop or a two-core machine, they compete with
     * the engine and never do (see {@link #jitFlags}).
     */
    static final int GATEWAY_C2_PROCESSORS = 8;

    /**
     * The host a stack runs on, as the JVM that starts it sees it.
     *
     * @param processors  {@link Runtime#availableProcessors()}
     * @param memoryBytes the host's physical memory (the container's limit where there is one)
     */
    record Host(int processors, long memoryBytes) {

        Host {
            if (processors < 1 || memoryBytes < 1) {
                throw new IllegalArgumentException("a host has processors and memory, got " + processors + " and "
                        + memoryBytes);
            }
        }

        static Host current() {
            long memory = ((com.sun.management.OperatingSystemMXBean)
                    java.lang.management.ManagementFactory.getOperatingSystemMXBean()).getTotalMemorySize();
            return new Host(Runtime.getRuntime().availableProcessors(), Math.max(1, memory));
        }

        boolean largeMemory() {
            return memoryBytes >= (long) LARGE_MEMORY_GIB << 30;
        }

        long memoryGib() {
            return Math.round(memoryBytes / (double) (1L << 30));
        }
    }

    /** The JVM flags every service gets on a small host (see {@link #jvmFlags(Host)}). */
    static final List<String> JVM_FLAGS = jvmFlags(HEAP_MAX);

    /**
     * The JVM flags every service gets on {@code host}, before the user's own {@code --jvm-flag}s (a later flag
     * wins): the heap ceiling follows the host's memory ({@link #HEAP_MAX}, or {@link #LARGE_HEAP_MAX} from
     * {@value #LARGE_MEMORY_GIB} GiB); the rest does not depend on the host.
     */
    static List<String> jvmFlags(Host host) {
        return host.largeMemory() ? jvmFlags(LARGE_HEAP_MAX) : JVM_FLAGS;
    }

    private static List<String> jvmFlags(String heapMax) {
        return List.of(
                "-XX:+UseSerialGC",
                "-Xms32m",
                "-Xmx" + heapMax,
                "-Xmn8m",
                "-XX:MinHeapFreeRatio=10",
                "-XX:MaxHeapFreeRatio=30",
                "-XX:TrimNativeHeapInterval=5000",
                "-XX:+UseCompactObjectHeaders");
    }

    /**
     * What the JIT is told to do. The request path (Reactor Netty, Spring, Jackson, Kafka's clients) is thousands of
     * methods that each run a few times per request; with the JVM's defaults it is compiled only after thousands of
     * requests, and C2's compilations of it, on two cores, cost more CPU than they ever save. So:
     * <ul>
     *   <li>every service compiles after a twentieth of the usual invocations ({@value #COMPILE_SOONER}), so that
     *       the request path is compiled within the warm-up's requests ({@link StackWarmUp});</li>
     *   <li>a gateway runs no engine code: on a host of fewer than {@value #GATEWAY_C2_PROCESSORS} processors the
     *       client compiler only ({@code TieredStopAtLevel=1}); from that many on it keeps the whole tiered JIT, C2
     *       included, whose compilations there run beside the workers' compute threads rather than instead of
     *       them;</li>
     *   <li>a worker's vector kernels need C2 (only C2 turns Vector API calls into vector instructions): the
     *       compiler directive {@value #ENGINE_C2_DIRECTIVES} (under the checkout) excludes every other method from
     *       C2, and such a method is compiled again by C1 without profiling when C2 would have taken it. The
     *       {@link #EARLY_C2_TIER} thresholds make that happen after a few dozen invocations rather than thousands,
     *       so the worker's request path spends little time in C1's slower profiling code (and its memory), and the
     *       kernels reach C2 in the first requests; and their code cache is one 64 MB heap
     *       ({@link #WORKER_CODE_CACHE});</li>
     *   <li>a worker on the scalar kernels ({@code ripcord.engine.kernels=scalar}): the client compiler only.</li>
     * </ul>
     * Measured on stories15M at concurrency 1 (docs/benchmarks.md): with the JVM's defaults the per-request CPU of
     * the three services was still falling after a thousand requests, C2's compiler thread taking over half of the
     * gateway's; with these, the first requests after the warm-up are at the steady state.
     */
    static List<String> jitFlags(Role role, StackOptions options, Host host) {
        List<String> flags = new ArrayList<>();
        boolean scalar = "scalar".equals(options.properties().get(KERNELS));
        Path directives = options.root().resolve(ENGINE_C2_DIRECTIVES);
        if (role == Role.GATEWAY && host.processors() >= GATEWAY_C2_PROCESSORS) {
            flags.add(COMPILE_SOONER); // the whole tiered JIT: the request path reaches C2 on spare processors
            return flags;
        }
        if (role == Role.GATEWAY || scalar) {
            flags.add("-XX:TieredStopAtLevel=1");
        } else if (Files.isRegularFile(directives)) { // else (not run from a checkout) C2 compiles everything hot
            flags.add("-XX:+UnlockDiagnosticVMOptions");
            flags.add("-XX:CompilerDirectivesFile=" + directives.toAbsolutePath().normalize());
            flags.addAll(EARLY_C2_TIER);
            flags.add(WORKER_CODE_CACHE);
        }
        flags.add(COMPILE_SOONER);
        return flags;
    }

    /**
     * A worker's code cache: 64 MB in one heap, where the JVM would reserve 240 MB in three segments (non-method
     * code, profiled and non-profiled methods) once C2 is on. Each segment keeps the pages it has ever used: the
     * profiled segment those of the C1 profiling code that plain C1 code replaced moments later. In one heap the
     * replacement reuses them; idle after {@code up}'s warm-up a worker used 24-27 MB of it, and held 12 MiB less
     * resident than with the segments (docs/configuration.md, "One host").
     */
    static final String WORKER_CODE_CACHE = "-XX:ReservedCodeCacheSize=64m";

    /** The compiler directive that keeps C2 for the engine's classes, relative to the checkout's root. */
    static final String ENGINE_C2_DIRECTIVES = ".mvn/jit/c2-for-the-engine-only.json";

    /** The JIT's invocation thresholds, scaled down (see {@link #jitFlags}). */
    static final String COMPILE_SOONER = "-XX:CompileThresholdScaling=0.05";

    /**
     * When a method compiled with profiling is handed on (to C2 for the engine's methods, to C1 without profiling
     * for the rest): a tenth of the JVM's defaults (5000, 600, 15000), before {@link #COMPILE_SOONER} scales them.
     */
    static final List<String> EARLY_C2_TIER = List.of("-XX:Tier4InvocationThreshold=500",
            "-XX:Tier4MinInvocationThreshold=60", "-XX:Tier4CompileThreshold=1000");

    /** The property that picks a worker's kernels; {@code scalar} ones run under C1 alone. */
    static final String KERNELS = "ripcord.engine.kernels";

    /** The environment every service gets (a value the launcher's own environment sets wins). */
    static final Map<String, String> ENVIRONMENT = Map.of("MALLOC_ARENA_MAX", "2");

    /** The property a worker's compute thread count is given by. */
    static final String ENGINE_THREADS = "ripcord.engine.threads";

    /** The property that bounds a decode worker's batch (the requests it decodes at a time). */
    static final String DECODE_MAX_BATCH = "ripcord.decode.max-batch";

    /**
     * Sequences per decode step for each of a decode worker's compute threads. Measured on stories15M, 2 cores, at
     * concurrency 32 (docs/benchmarks.md): with one compute thread a batch of 32 takes about 20 ms a step and, with
     * the gateway relaying 32 streams on the same cores, tail inter-token gaps of 65-87 ms; a batch of 16 steps in
     * about 9 ms, its p99 gap is about 33 ms, and the stack's tokens/s is higher. The requests beyond the batch wait
     * in decode's admission queue, before their prompts are computed (llama-server's slots do the same).
     */
    static final int DECODE_BATCH_PER_THREAD = 16;

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
     * set {@value #ENGINE_THREADS}, and a decode worker for its batch ({@link #DECODE_BATCH_PER_THREAD} per compute
     * thread, at most the engine's largest batch), unless they set {@value #DECODE_MAX_BATCH}: none for a
     * gateway.
     */
    static List<String> workerArguments(Role role, StackOptions options, int processors) {
        List<String> args = new ArrayList<>();
        if (role == Role.GATEWAY) {
            return args;
        }
        int workers = options.ports(Role.PREFILL).size() + options.ports(Role.DECODE).size();
        String given = options.properties().get(ENGINE_THREADS);
        int threads = given == null ? engineThreads(processors, workers) : positive(given);
        if (given == null) {
            args.add("--" + ENGINE_THREADS + "=" + threads);
        }
        if (role == Role.DECODE && !options.properties().containsKey(DECODE_MAX_BATCH) && threads > 0) {
            String engineMax = options.properties().get(ENGINE_MAX_BATCH);
            int cap = engineMax == null ? ENGINE_MAX_BATCH_DEFAULT : positive(engineMax);
            if (cap > 0) {
                args.add("--" + DECODE_MAX_BATCH + "=" + Math.min(cap, DECODE_BATCH_PER_THREAD * threads));
            }
        }
        return args;
    }

    /**
     * What {@code ./ripcord up} prints about its choices on {@code host}: engine threads per worker, decode's batch,
     * the heap ceiling and the gateway's JIT, with what the choice follows.
     */
    static String describe(Host host, StackOptions options) {
        int workers = options.ports(Role.PREFILL).size() + options.ports(Role.DECODE).size();
        String given = options.properties().get(ENGINE_THREADS);
        String threads = given != null ? given + " engine threads per worker (--" + ENGINE_THREADS + ")"
                : engineThreads(host.processors(), workers) + " engine thread(s) per worker (" + host.processors()
                        + " processors / " + workers + " workers)";
        String batch = workerArguments(Role.DECODE, options, host.processors()).stream()
                .filter(a -> a.startsWith("--" + DECODE_MAX_BATCH + "=")).findFirst()
                .map(a -> ", decode batch " + a.substring(a.indexOf('=') + 1)).orElse("");
        String heap = host.largeMemory() ? LARGE_HEAP_MAX : HEAP_MAX;
        String gateway = host.processors() >= GATEWAY_C2_PROCESSORS ? "C1 and C2" : "C1 only";
        return "host " + host.processors() + " processors, " + host.memoryGib() + " GiB: " + threads + batch
                + ", heap up to " + heap + " per service, gateway JIT " + gateway;
    }

    /**
     * A worker's weight cache ({@value #WEIGHT_CACHE}): the workers of one stack share a host, so that they map one
     * image of the packed weights rather than each packing a copy, {@code up} gives them {@code weights/} under the
     * model cache, unless the command line names a directory.
     */
    static List<String> weightCacheArguments(Role role, StackOptions options) {
        if (role == Role.GATEWAY || options.properties().containsKey(WEIGHT_CACHE)) {
            return List.of();
        }
        return List.of("--" + WEIGHT_CACHE + "=" + ModelStore.cacheDir().resolve("weights"));
    }

    /** The property naming a worker's directory of packed-weight images (worker-support's EngineProperties). */
    static final String WEIGHT_CACHE = "ripcord.engine.weight-cache";

    /** The property for the largest batch a worker's engine sizes its scratch memory for; it caps decode's. */
    static final String ENGINE_MAX_BATCH = "ripcord.engine.max-batch";

    /** {@value #ENGINE_MAX_BATCH}'s default (worker-support's {@code EngineProperties}). */
    static final int ENGINE_MAX_BATCH_DEFAULT = 32;

    /** A count given on the command line, or 0 when it is not a positive number (the worker then says why). */
    private static int positive(String value) {
        try {
            return Math.max(0, Integer.parseInt(value.trim()));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
