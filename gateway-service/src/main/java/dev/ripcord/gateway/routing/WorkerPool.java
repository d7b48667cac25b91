package dev.ripcord.gateway.routing;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.gateway.resilience.WorkerResilience;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;

/**
 * The instances of one worker role, chosen by the pool's {@link RoutingPolicy} (least outstanding legs by default)
 * among those whose circuit breaker and bulkhead let a call through.
 *
 * <p>Least-outstanding rather than round-robin because request cost varies by orders of magnitude (a 16K-token
 * prefill against a 5-token one): the count of requests in flight is the cheapest honest proxy for load. Ties go
 * to the instance after the last one chosen, so equal load spreads evenly. Spring Cloud LoadBalancer offers
 * round-robin and random only, hence this small class. The prefill pool weighs load against the request's cached
 * prefix at each instance ({@link RoutingPolicy#CACHE_AWARE}, with an {@link Affinity}).
 *
 * <p>Routing asks each candidate, in load order, for a bulkhead slot and then a breaker permission, and takes the
 * first that grants both: an open breaker (or a half-open one whose probes are all out) takes its instance out of
 * routing, and a full bulkhead sends the leg to the next instance. Neither ever waits. When no instance grants
 * both, {@link #acquire} throws {@link NoWorkerAvailableException}.
 *
 * <p>{@link #acquire} returns a {@link Lease}; the caller reports the call's outcome to the instance's breaker
 * through it ({@link Lease#admitted()}, {@link Lease#failed}, {@link Lease#ignored()}) and closes it when the leg
 * ends, which gives the bulkhead slot back (exactly once).
 *
 * <p>Membership changes while the pool serves ({@link #update}, called by {@link WorkerDiscovery} as pods come and
 * go): an address new to the pool is routed to from the next {@link #acquire}; an address that left is routed to no
 * more, and the legs already on it keep their leases and finish. An instance that leaves and comes back (a pod that
 * dropped out of DNS for a moment) is the same {@link WorkerInstance}: its breaker, bulkhead and counts carry over,
 * and a breaker is per address, so a breaker's state is never lost to a refresh. An instance that answered
 * {@code 503 draining} ({@link WorkerInstance#markDraining()}) is skipped at once, until it leaves the pool and comes
 * back, or its mark expires.
 */
public final class WorkerPool {

    private final String role;
    private final WorkerResilience resilience;
    /** Every instance this pool has known, routable or retired: one per address, for breaker continuity. */
    private final Map<URI, WorkerInstance> known = new LinkedHashMap<>();
    private volatile List<WorkerInstance> instances = List.of();
    private final AtomicInteger next = new AtomicInteger();
    private final RoutingPolicy policy;
    private final List<java.util.function.Consumer<WorkerInstance>> leaveListeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    /** A pool with a fixed list of addresses (it may still be {@link #update}d). */
    public WorkerPool(String role, List<URI> uris, WorkerResilience resilience) {
        this(role, resilience);
        if (uris == null || uris.isEmpty()) {
            throw new IllegalArgumentException("no " + role + " workers configured (ripcord.gateway." + role
                    + "-workers)");
        }
        update(uris);
    }

    /** An empty pool, filled by {@link #update} (discovery); until then {@link #acquire} finds no worker. */
    public WorkerPool(String role, WorkerResilience resilience) {
        this(role, resilience, RoutingPolicy.LEAST_LOADED);
    }

    /** An empty pool that orders its instances by {@code policy}. */
    public WorkerPool(String role, WorkerResilience resilience, RoutingPolicy policy) {
        this.role = role;
        this.resilience = resilience;
        this.policy = java.util.Objects.requireNonNull(policy, "policy");
    }

    public RoutingPolicy policy() {
        return policy;
    }

    /**
     * Calls {@code listener} with every instance that leaves the pool ({@link #update}), on the updating thread
     * (the prefix index forgets such a worker's pages).
     */
    public void onLeave(java.util.function.Consumer<WorkerInstance> listener) {
        leaveListeners.add(listener);
    }

    public String role() {
        return role;
    }

    /** The instances routed to now, in the order of the last {@link #update}. */
    public List<WorkerInstance> instances() {
        return instances;
    }

    /**
     * Sets the pool's members to {@code uris} (duplicates count once). Returns what changed. Legs in flight on an
     * instance that left keep running; new legs go only to the new members.
     */
    public synchronized Membership update(Collection<URI> uris) {
        LinkedHashSet<URI> wanted = new LinkedHashSet<>(uris);
        List<WorkerInstance> before = instances;
        List<String> added = new ArrayList<>();
        List<String> removed = new ArrayList<>();
        List<WorkerInstance> left = new ArrayList<>();
        for (WorkerInstance instance : before) {
            if (!wanted.contains(instance.uri())) {
                removed.add(instance.name());
                left.add(instance);
            }
        }
        List<WorkerInstance> after = new ArrayList<>(wanted.size());
        for (URI uri : wanted) {
            WorkerInstance instance = known.get(uri);
            if (instance == null) {
                String name = WorkerInstance.nameOf(role, uri);
                instance = new WorkerInstance(role, uri, resilience.circuitBreaker(name), resilience.bulkhead(name),
                        resilience.clock());
                known.put(uri, instance);
            }
            if (!before.contains(instance)) {
                added.add(instance.name());
                instance.clearDraining(); // it left and came back: a new pod at the address, or readiness restored
            }
            after.add(instance);
        }
        // Forget retired instances with nothing left on them, so pod churn does not grow the map without bound
        // (their breakers stay in the registry under their names, so one that comes back finds its state).
        known.values().removeIf(i -> !wanted.contains(i.uri()) && i.outstanding() == 0);
        instances = List.copyOf(after);
        for (WorkerInstance instance : left) {
            leaveListeners.forEach(listener -> listener.accept(instance));
        }
        return new Membership(List.copyOf(added), List.copyOf(removed));
    }

    /** What one {@link #update} changed, by instance name. */
    public record Membership(List<String> added, List<String> removed) {
        public boolean changed() {
            return !added.isEmpty() || !removed.isEmpty();
        }
    }

    /** {@link #acquire(Collection)} with no instance to avoid. */
    public Lease acquire() {
        return acquire(List.of());
    }

    /**
     * Picks the least-loaded instance that grants a bulkhead slot and a breaker permission, preferring instances
     * not in {@code tried} (a retry goes elsewhere when it can, and back to a tried instance only when nothing else
     * may take it).
     *
     * @throws NoWorkerAvailableException when every instance's breaker refuses or its bulkhead is full
     */
    public Lease acquire(Collection<WorkerInstance> tried) {
        return acquire(tried, List.of());
    }

    /**
     * Like {@link #acquire(Collection)}, never choosing an instance in {@code excluded} (one that may still hold an
     * abandoned attempt of the same request).
     *
     * @throws NoWorkerAvailableException when no instance outside {@code excluded} grants a slot and a permission
     */
    public Lease acquire(Collection<WorkerInstance> tried, Collection<WorkerInstance> excluded) {
        return acquire(tried, excluded, Affinity.NONE);
    }

    /**
     * Like {@link #acquire(Collection, Collection)}, ordering the candidates by the pool's {@link RoutingPolicy}
     * with the request's {@code affinity} (used by {@link RoutingPolicy#CACHE_AWARE} only).
     *
     * @throws NoWorkerAvailableException when no instance outside {@code excluded} grants a slot and a permission
     */
    public Lease acquire(Collection<WorkerInstance> tried, Collection<WorkerInstance> excluded, Affinity affinity) {
        List<WorkerInstance> members = instances; // one snapshot per decision: membership may change meanwhile
        int n = members.size();
        if (n == 0) {
            throw new NoWorkerAvailableException(role, 0, 0, 0);
        }
        int start = Math.floorMod(next.getAndIncrement(), n);
        List<WorkerInstance> order = new ArrayList<>(members);
        order.removeAll(excluded);
        Comparator<WorkerInstance> byTried = Comparator.comparingInt(i -> tried.contains(i) ? 1 : 0);
        Comparator<WorkerInstance> byTurn = Comparator.comparingInt(i -> Math.floorMod(members.indexOf(i) - start, n));
        switch (policy) {
            case ROUND_ROBIN -> order.sort(byTried.thenComparing(byTurn));
            case LEAST_LOADED -> order.sort(byTried.thenComparingInt(WorkerInstance::outstanding).thenComparing(byTurn));
            case CACHE_AWARE -> {
                Map<WorkerInstance, Double> score = new java.util.HashMap<>();
                for (WorkerInstance i : order) {
                    score.put(i, affinity.of(i) - i.outstanding()); // one read per instance: counts move meanwhile
                }
                order.sort(byTried.thenComparing(Comparator.comparingDouble((WorkerInstance i) -> score.get(i))
                        .reversed()).thenComparing(byTurn));
            }
        }
        int open = 0;
        int full = 0;
        int draining = 0;
        for (WorkerInstance candidate : order) {
            if (candidate.draining()) {
                draining++;
                continue;
            }
            Bulkhead bulkhead = candidate.bulkhead();
            if (!bulkhead.tryAcquirePermission()) {
                full++;
                continue;
            }
            CircuitBreaker breaker = candidate.circuitBreaker();
            if (!breaker.tryAcquirePermission()) {
                bulkhead.releasePermission(); // not used: no call, so no "call finished" event either
                open++;
                continue;
            }
            candidate.counter().incrementAndGet();
            candidate.routedCounter().incrementAndGet();
            return new Lease(candidate);
        }
        throw new NoWorkerAvailableException(role, open, full, draining);
    }

    /**
     * One leg's hold on one instance: a bulkhead slot for the life of the leg and a breaker permission for its
     * call. The breaker hears at most one outcome per lease ({@link #admitted}, {@link #failed}, {@link #ignored});
     * the first one reported wins, and a lease closed without any (the client went away while connecting) gives
     * its permission back. {@link #failedAfterAdmission} is the one exception: a stream that breaks after the
     * worker admitted the leg is recorded as a further failure of the instance.
     */
    public static final class Lease implements AutoCloseable {
        private final WorkerInstance instance;
        private final long startNanos = System.nanoTime();
        private final AtomicBoolean outcome = new AtomicBoolean();
        private final AtomicBoolean released = new AtomicBoolean();

        private Lease(WorkerInstance instance) {
            this.instance = instance;
        }

        public WorkerInstance instance() {
            return instance;
        }

        /** The worker admitted the call: a success for its breaker. */
        public void admitted() {
            if (outcome.compareAndSet(false, true)) {
                instance.circuitBreaker().onSuccess(elapsedNanos(), TimeUnit.NANOSECONDS);
            }
        }

        /** The call failed because of the instance (no connection, 5xx, no answer in time): a breaker failure. */
        public void failed(Throwable cause) {
            if (outcome.compareAndSet(false, true)) {
                instance.circuitBreaker().onError(elapsedNanos(), TimeUnit.NANOSECONDS, cause);
            }
        }

        /** The call ended in a way that says nothing about the instance's health (busy, 4xx): no outcome. */
        public void ignored() {
            if (outcome.compareAndSet(false, true)) {
                instance.circuitBreaker().releasePermission();
            }
        }

        /** The admitted leg's stream broke (connection lost mid-stream): one more failure for the breaker. */
        public void failedAfterAdmission(Throwable cause) {
            outcome.set(true); // whatever was reported at admission stays; close() must not release on top
            instance.circuitBreaker().onError(elapsedNanos(), TimeUnit.NANOSECONDS, cause);
        }

        /**
         * Gives the bulkhead slot back, and the breaker permission if no outcome was reported; only the first call
         * has an effect.
         */
        @Override
        public void close() {
            if (released.compareAndSet(false, true)) {
                if (outcome.compareAndSet(false, true)) {
                    instance.circuitBreaker().releasePermission();
                }
                instance.counter().decrementAndGet();
                instance.bulkhead().onComplete();
            }
        }

        private long elapsedNanos() {
            return System.nanoTime() - startNanos;
        }
    }
}
