package dev.ripcord.engine;

/**
 * The KV page pool cannot satisfy an allocation. An expected condition under load (the scheduler should queue or
 * preempt), so it is cheap: no stack trace, no suppression. Nothing was allocated by the failed call.
 */
public final class KvPoolExhaustedException extends RuntimeException {
    private final int requested;
    private final int free;

    KvPoolExhaustedException(int requested, int free, int total) {
        super("KV page pool exhausted: %d pages requested, %d of %d free".formatted(requested, free, total),
                null, false, false);
        this.requested = requested;
        this.free = free;
    }

    public int requested() {
        return requested;
    }

    public int free() {
        return free;
    }
}
