package dev.ripcord.stack.cancel;

/**
 * The stack settings the cancellation tests share, as constants so that classes naming the same set share one
 * stack (a stack is identified by its properties; starting one costs tens of seconds on a 2-core machine).
 *
 * <p>Why the {@code small} model: cancelling <em>during</em> prefill needs chunks that take long enough to see
 * between two polls of the journal. With chunks of 64 tokens a chunk of the small model takes tens of milliseconds,
 * so a prompt of 1 500 bytes is 24 chunks, about a second of prefill: long enough to disconnect after the second
 * chunk, short enough that the uncancelled control case stays cheap. {@code max-running=1} is the bug report's
 * setting: the cancelled prompt is all that stands between the next prompt and the engine.
 */
final class CancelStacks {

    static final String SMALL_MODEL = "ripcord.engine.preset=small";
    static final String CHUNK_64 = "ripcord.prefill.chunk-tokens=64";
    static final String ONE_RUNNING = "ripcord.prefill.max-running=1";

    static final String BOTH = "ripcord.cancel.propagation=both";
    static final String IN_BAND = "ripcord.cancel.propagation=in-band";
    static final String KAFKA = "ripcord.cancel.propagation=kafka";
    static final String NONE = "ripcord.cancel.propagation=none";

    /**
     * The {@code both} stack's KV backend: {@code auto}, which must pick shared memory on one host (every other test
     * stack runs {@code shm}, {@link dev.ripcord.stack.TestStacks#DEFAULT_PROPERTIES}; the abort storm's stack
     * {@code tcp}). A property of an existing stack, not a stack of its own: {@link KvBackendIT}.
     */
    static final String AUTO_BACKEND = "ripcord.kv.backend=auto";

    /** The abort storm's stack ({@link AbortStormIT} says why each): its KV goes over TCP ({@link KvBackendIT}). */
    static final String STORM_KV_PAGES = "ripcord.engine.kv-pages=8192";
    static final String STORM_QUEUE = "ripcord.prefill.queue-capacity=1024";
    static final String TWO_RUNNING = "ripcord.prefill.max-running=2";
    /**
     * The abort storm's decode batch: room for half the storm at once ({@code ripcord.engine.max-batch} sizes the
     * engine's scratch for it). With decode's default batch, decode admitted a few dozen requests at a time and only
     * those reached prefill, whose queue then stayed so short that no cancel found a prompt in it in some runs;
     * with this one, hundreds of prompts queue at prefill behind its two running ones.
     */
    static final String STORM_DECODE_BATCH = "ripcord.decode.max-batch=256";
    static final String STORM_ENGINE_BATCH = "ripcord.engine.max-batch=256";
    static final String STORM_ATTACH_TIMEOUT = "ripcord.kv.attach-timeout=15s";
    static final String STORM_JOURNAL = "ripcord.worker.journal-size=200000";
    static final String TCP_BACKEND = "ripcord.kv.backend=tcp";
    /**
     * The abort storm's workers run the vector kernels (and so C2 for the engine, as {@code HostBudget} gives it),
     * unlike other tiny-model stacks: 500 requests queue at once, and with the slower scalar kernels under C1 the
     * storm took 65 s instead of 25 s, with queue times nearing its attach timeout.
     */
    static final String VECTOR_KERNELS = "ripcord.engine.kernels=vector";

    /** Chunk size of the small-model stacks, in tokens. */
    static final int CHUNK_TOKENS = 64;
    /** A prompt of this many bytes is {@value #LONG_PROMPT_CHUNKS} chunks of {@value #CHUNK_TOKENS} tokens. */
    static final int LONG_PROMPT_BYTES = 1500;
    static final int LONG_PROMPT_CHUNKS = 24;
    /**
     * A prompt that keeps prefill busy while a test steps through another request's phases: 63 chunks, a few
     * seconds, so it cannot finish before the test is done with it even on a fast machine.
     */
    static final int OCCUPYING_PROMPT_BYTES = 4000;

    private CancelStacks() {
    }
}
