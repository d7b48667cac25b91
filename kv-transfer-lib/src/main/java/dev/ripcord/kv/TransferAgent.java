package dev.ripcord.kv;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Objects;

/**
 * One per process: registers memory, opens receive sessions (decode) and connects send sessions (prefill), over
 * TCP or same-host shared memory.
 *
 * <pre>{@code
 * // decode
 * KvRegion pool = agent.allocateRegion(pages * pageBytes);          // or registerRegion(engine's segment)
 * ReceiveSession rx = agent.openReceive(requestId, pool, reservedPages, listener);
 * String wire = rx.descriptor().encode();                          // to prefill via the control plane
 * rx.released().thenRun(() -> { if aborted: free the pages });
 *
 * // prefill
 * SendSession tx = agent.connect(ReceiveDescriptor.parse(wire));
 * tx.send(pool, chunkOffset, chunkBytes, dstOffset);               // per computed chunk
 * tx.complete(firstTokenBytes);                                    // or tx.abort("client went away")
 * }</pre>
 *
 * <p>Closing the agent aborts every live session (cause AGENT_CLOSED) and closes every region, waits up to the
 * close timeout for them to drain and release, then closes connections and event loops, force-releases what is
 * left, and last of all unmaps its shared-memory files. The agent is thread-safe.
 */
public interface TransferAgent extends AutoCloseable {

    /** Starts an agent: binds its listen address and, unless the backend is TCP, creates its fence table. */
    static TransferAgent start(TransferAgentOptions options) {
        return AgentProvider.INSTANCE.start(Objects.requireNonNull(options, "options"));
    }

    /**
     * Makes agents: implemented once, by the library's agent package ({@code dev.ripcord.kv.agent}), and found
     * with {@link java.util.ServiceLoader} so that this API package imports nothing of the implementation (the module's
     * layers point one way: the implementation depends on the API, never the reverse). Not for services.
     */
    interface Provider {
        TransferAgent start(TransferAgentOptions options);
    }

    String name();

    TransferAgentOptions options();

    /** The bound TCP address (with the real port when the configured one was 0). */
    InetSocketAddress listenAddress();

    /** True when regions allocated by this agent are shared-memory files a same-host sender can write into. */
    boolean offersSharedMemory();

    /**
     * Allocates {@code bytes} of page-aligned memory owned by the agent: a shared-memory file when the agent offers
     * that backend, else a shared arena. Use its {@link KvRegion#segment()} as the engine's page pool.
     */
    KvRegion allocateRegion(long bytes);

    /**
     * Registers memory the caller owns (e.g. the engine's page pool). The segment must be native and accessible
     * from any thread (a shared, auto or global arena). The caller must not free it before
     * {@link KvRegion#released()} completes. Such regions travel over TCP only.
     */
    KvRegion registerRegion(MemorySegment segment);

    /** {@link #openReceive(String, KvRegion, List, ReceiveListener)} without a listener. */
    default ReceiveSession openReceive(String requestId, KvRegion region, List<ByteRange> targets) {
        return openReceive(requestId, region, targets, ReceiveListener.NONE);
    }

    /**
     * Opens a receive session into {@code targets} of {@code region} (the request's reserved pages; the sender's
     * offsets address their concatenation in list order). Hand {@link ReceiveSession#descriptor()} to the sender.
     * If no sender attaches within the attach timeout the session aborts (ATTACH_TIMEOUT).
     *
     * @throws IllegalArgumentException targets out of the region or overlapping, or a region of another agent
     * @throws IllegalStateException    the region or the agent is closed
     */
    ReceiveSession openReceive(String requestId, KvRegion region, List<ByteRange> targets, ReceiveListener listener);

    /**
     * Connects a send session to the receive session a descriptor names. Never blocks: the connection to the
     * receiving agent (shared by all sessions to it) is made or reused in the background, and writes queue until
     * it is up. If it cannot be made, the session aborts (PEER_UNREACHABLE). The backend is chosen here: see
     * {@link Backend#AUTO}.
     *
     * @throws IllegalStateException    the agent is closed, or this descriptor is already connected
     * @throws IllegalArgumentException the backend is SHM and the descriptor cannot be reached that way
     */
    SendSession connect(ReceiveDescriptor descriptor);

    /**
     * Tells {@code listener} about every session this agent opens from now on: opened, then each state it enters
     * (the worker's lifecycle log). One listener; {@code null} removes it.
     */
    void onSession(SessionListener listener);

    /** Live regions, sessions and bytes of this agent (also exported as gauges). */
    TransferStats stats();

    /**
     * Aborts every live session (AGENT_CLOSED), closes every region, waits up to the close timeout for them to
     * drain and release, then closes connections and threads. A receive session still waiting on a live
     * shared-memory writer at that point is released anyway: its memory is the agent's own mapping, which is
     * unmapped, so a late write can only reach the (deleted) file's pages, never memory reused by anyone.
     * Idempotent.
     */
    @Override
    void close();
}
