package dev.ripcord.gateway.routing;

import java.net.URI;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The instances of one worker role, chosen by least outstanding requests.
 *
 * <p>Least-outstanding rather than round-robin because request cost varies by orders of magnitude (a 16K-token
 * prefill against a 5-token one): the count of requests in flight is the cheapest honest proxy for load. Ties go
 * to the instance after the last one chosen, so equal load spreads evenly. Spring Cloud LoadBalancer offers
 * round-robin and random only, hence this small class.
 *
 * <p>{@link #acquire()} returns a {@link Lease}; closing it (exactly once takes effect) gives the slot back.
 */
public final class WorkerPool {

    private final String role;
    private final List<WorkerInstance> instances;
    private final AtomicInteger next = new AtomicInteger();

    public WorkerPool(String role, List<URI> uris) {
        if (uris == null || uris.isEmpty()) {
            throw new IllegalArgumentException("no " + role + " workers configured (ripcord.gateway." + role
                    + "-workers)");
        }
        this.role = role;
        this.instances = uris.stream().map(u -> new WorkerInstance(role, u)).toList();
    }

    public String role() {
        return role;
    }

    public List<WorkerInstance> instances() {
        return instances;
    }

    /** Picks the instance with the fewest requests in flight and counts this request against it. */
    public Lease acquire() {
        int n = instances.size();
        int start = Math.floorMod(next.getAndIncrement(), n);
        WorkerInstance best = null;
        int bestLoad = Integer.MAX_VALUE;
        for (int i = 0; i < n; i++) {
            WorkerInstance candidate = instances.get((start + i) % n);
            int load = candidate.outstanding();
            if (load < bestLoad) {
                best = candidate;
                bestLoad = load;
            }
        }
        best.counter().incrementAndGet();
        return new Lease(best);
    }

    /** A slot on one instance, held for the life of one request's leg. */
    public static final class Lease implements AutoCloseable {
        private final WorkerInstance instance;
        private final AtomicBoolean released = new AtomicBoolean();

        private Lease(WorkerInstance instance) {
            this.instance = instance;
        }

        public WorkerInstance instance() {
            return instance;
        }

        /** Gives the slot back; only the first call has an effect. */
        @Override
        public void close() {
            if (released.compareAndSet(false, true)) {
                instance.counter().decrementAndGet();
            }
        }
    }
}
