package dev.ripcord.worker;

import java.lang.foreign.MemorySegment;

import dev.ripcord.engine.KvPoolMemory;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;

/**
 * The engine's KV page pool in memory its transfer agent owns: a region from {@link TransferAgent#allocateRegion},
 * a shared-memory file when the agent offers that backend (so a same-host peer writes a request's KV straight into
 * these pages), else the agent's private memory (TCP only).
 *
 * <p>Ownership: the agent owns the memory and frees it exactly once, when the region is released. {@link #close()}
 * only closes the region: it is released once every transfer session targeting or reading it has let go, or when
 * the agent closes. Close this after the engine (whose pages these are) and before the agent: then the memory
 * outlives every reader, the engine and the transfers alike. In a worker Spring's destroy order does that (the
 * engine depends on this, this on the agent).
 */
public final class AgentPoolMemory implements KvPoolMemory, AutoCloseable {

    private final TransferAgent agent;
    private KvRegion region; // guarded by this

    public AgentPoolMemory(TransferAgent agent) {
        this.agent = agent;
    }

    /** Allocates the region; once (an engine asks once). */
    @Override
    public synchronized MemorySegment allocate(long bytes) {
        if (region != null) {
            throw new IllegalStateException("the KV pool region of agent " + agent.name() + " is already allocated");
        }
        region = agent.allocateRegion(bytes);
        return region.segment();
    }

    /** The region the engine's pool lives in. @throws IllegalStateException if no engine asked for it yet */
    public synchronized KvRegion region() {
        if (region == null) {
            throw new IllegalStateException("no engine has allocated its KV pool from agent " + agent.name());
        }
        return region;
    }

    /** Closes the region (never blocks): its memory is freed once no transfer uses it, at the latest by the agent. */
    @Override
    public synchronized void close() {
        if (region != null) {
            region.close();
        }
    }
}
