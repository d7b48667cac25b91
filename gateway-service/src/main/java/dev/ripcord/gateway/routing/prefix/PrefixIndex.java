package dev.ripcord.gateway.routing.prefix;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.ripcord.protocol.prefix.PrefixCacheEvent;

/**
 * Which prefill worker holds which prefix-cache pages, as the workers' {@link PrefixCacheEvent}s say: what a gateway
 * routes by.
 *
 * <p>Design note. One thread applies events ({@link #apply}, the topic's consumer); any thread reads
 * ({@link #cachedPages}, routing). A worker's state is one {@link Worker}: its generation, the last sequence number
 * applied, whether it is trusted, and its page keys in a concurrent set, replaced whole when a generation begins, so a
 * reader sees one generation's keys. The rules, per worker:
 *
 * <ul>
 *   <li>{@code CLEARED} of a generation not seen before: everything known of the worker is dropped, and the new
 *       generation starts, trusted, empty (a restarted worker's old pages go here).</li>
 *   <li>An event whose sequence number is not above the last one applied in its generation, or of a generation
 *       already replaced: a redelivery or a straggler, ignored (events are at least once; applying is
 *       idempotent).</li>
 *   <li>The next sequence number of the current generation: applied ({@code STORED} adds keys, {@code REMOVED}
 *       drops them).</li>
 *   <li>A sequence number skipped, or a new generation that did not begin with a {@code CLEARED} seen here: events
 *       were lost, so the worker's keys are dropped and nothing more of it is applied until its next
 *       {@code CLEARED}: it is <em>untrusted</em>, and routing treats it as holding nothing.</li>
 *   <li>The first event seen of a worker not known here, mid-generation (the topic's retention deleted its
 *       {@code CLEARED}): adopted from there. Retention deletes the head of the log, so what follows is complete,
 *       and the keys built from it are a subset of what the worker holds.</li>
 * </ul>
 *
 * <p>Worker IDs are compared without case ({@code host:port}, as in {@code ripcord.gateway.prefill-workers}).
 */
public final class PrefixIndex {

    /** What an event did, for the {@code outcome} of {@code ripcord.gateway.prefix.events}. */
    public enum Outcome {
        APPLIED, DUPLICATE, STALE, GAP, UNTRUSTED;

        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Generations of a worker remembered as replaced, so their stragglers are recognised. */
    private static final int RETIRED_GENERATIONS = 16;

    private final Map<String, Worker> workers = new ConcurrentHashMap<>();

    /** One worker's known pages: one generation of them. */
    static final class Worker {
        final long generation;
        final int pageTokens;
        final Set<Long> keys = ConcurrentHashMap.newKeySet();
        final Deque<Long> retired;
        volatile long lastSeq;
        volatile boolean trusted;

        Worker(long generation, int pageTokens, long seq, boolean trusted, Deque<Long> retired) {
            this.generation = generation;
            this.pageTokens = pageTokens;
            this.lastSeq = seq;
            this.trusted = trusted;
            this.retired = retired;
        }
    }

    /** Applies one event (the consumer's thread only). */
    public Outcome apply(PrefixCacheEvent event) {
        String id = normalize(event.workerId());
        Worker w = workers.get(id);
        if (w == null) {
            Worker adopted = new Worker(event.generation(), event.pageTokens(), event.seq(), true, new ArrayDeque<>());
            apply(adopted, event);
            workers.put(id, adopted);
            return Outcome.APPLIED;
        }
        if (event.generation() != w.generation) {
            if (w.retired.contains(event.generation())) {
                return Outcome.STALE;
            }
            Deque<Long> retired = w.retired;
            retired.addFirst(w.generation);
            while (retired.size() > RETIRED_GENERATIONS) {
                retired.removeLast();
            }
            // A CLEARED begins the generation; any other event means its CLEARED was lost here.
            boolean cleared = event.kind() == PrefixCacheEvent.Kind.CLEARED;
            Worker next = new Worker(event.generation(), event.pageTokens(), event.seq(), cleared, retired);
            apply(next, event);
            workers.put(id, next);
            return cleared ? Outcome.APPLIED : Outcome.GAP;
        }
        if (event.seq() <= w.lastSeq) {
            return Outcome.DUPLICATE;
        }
        if (!w.trusted) {
            w.lastSeq = event.seq();
            return Outcome.UNTRUSTED;
        }
        if (event.seq() != w.lastSeq + 1) {
            w.trusted = false;
            w.keys.clear();
            w.lastSeq = event.seq();
            return Outcome.GAP;
        }
        w.lastSeq = event.seq();
        apply(w, event);
        return Outcome.APPLIED;
    }

    private static void apply(Worker w, PrefixCacheEvent event) {
        if (!w.trusted) {
            return;
        }
        switch (event.kind()) {
            case STORED -> {
                for (long key : event.keys()) {
                    w.keys.add(key);
                }
            }
            case REMOVED -> {
                for (long key : event.keys()) {
                    w.keys.remove(key);
                }
            }
            case CLEARED -> w.keys.clear();
        }
    }

    /** Forgets a worker (it left the pool); its later events start it afresh. */
    public void forget(String workerId) {
        workers.remove(normalize(workerId));
    }

    /** The page size a trusted worker's keys are chained with; 0 when the worker is unknown or untrusted. */
    public int pageTokens(String workerId) {
        Worker w = workers.get(normalize(workerId));
        return w == null || !w.trusted ? 0 : w.pageTokens;
    }

    /**
     * How many of {@code keys} (a prompt's page keys, head first, chained with {@link #pageTokens}) the worker holds
     * as a prefix: the count of leading keys it holds. 0 for an unknown or untrusted worker.
     */
    public int cachedPages(String workerId, long[] keys) {
        Worker w = workers.get(normalize(workerId));
        if (w == null || !w.trusted) {
            return 0;
        }
        int n = 0;
        while (n < keys.length && w.keys.contains(keys[n])) {
            n++;
        }
        return n;
    }

    /** Whether the worker is known and trusted. */
    public boolean trusted(String workerId) {
        Worker w = workers.get(normalize(workerId));
        return w != null && w.trusted;
    }

    /** Page keys held by trusted workers, all together. */
    public long pages() {
        long n = 0;
        for (Worker w : workers.values()) {
            if (w.trusted) {
                n += w.keys.size();
            }
        }
        return n;
    }

    /** Workers known, trusted or not. */
    public int workers() {
        return workers.size();
    }

    /** Workers known but untrusted (a gap, until their next {@code CLEARED}). */
    public int untrustedWorkers() {
        int n = 0;
        for (Worker w : workers.values()) {
            if (!w.trusted) {
                n++;
            }
        }
        return n;
    }

    /** Whether the index knows nothing at all (routing is by load alone then). */
    public boolean isEmpty() {
        return workers.isEmpty();
    }

    static String normalize(String workerId) {
        return workerId.toLowerCase(Locale.ROOT);
    }
}
