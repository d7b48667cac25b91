package dev.ripcord.kv;

import dev.ripcord.kv.agent.DefaultTransferAgent;
import dev.ripcord.kv.session.DefaultKvRegion;
import dev.ripcord.kv.session.DefaultReceiveSession;
import dev.ripcord.kv.session.DefaultSendSession;

/**
 * The implementations behind the API a test holds, for the assertions only the implementation can answer (fence
 * slots in use, a region's holders, frames read, a session's test seam). Production code never needs these casts.
 */
final class Internals {
    private Internals() {
    }

    static DefaultTransferAgent agent(TransferAgent agent) {
        return (DefaultTransferAgent) agent;
    }

    static DefaultKvRegion region(KvRegion region) {
        return (DefaultKvRegion) region;
    }

    static DefaultSendSession send(SendSession session) {
        return (DefaultSendSession) session;
    }

    static DefaultReceiveSession receive(ReceiveSession session) {
        return (DefaultReceiveSession) session;
    }
}
