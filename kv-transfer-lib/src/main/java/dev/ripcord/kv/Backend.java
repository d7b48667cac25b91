package dev.ripcord.kv;

/** How bytes travel from a sender's region to a receiver's region. */
public enum Backend {
    /**
     * Shared memory when the receiver's region is a shared-memory file on this host that this process can map,
     * else TCP. The default.
     */
    AUTO,
    /** Netty over TCP: the sender's segment goes to the socket without a copy; one copy into the receiver's region. */
    TCP,
    /**
     * Same host only: the sender copies straight into the receiver's memory-mapped region; control frames still
     * use the TCP connection. As a receiver option it requires shared-memory regions; as a sender option it refuses
     * descriptors that cannot be reached that way.
     */
    SHM
}
