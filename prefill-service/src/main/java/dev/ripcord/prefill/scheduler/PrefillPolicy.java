package dev.ripcord.prefill.scheduler;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Which prompt the prefill worker computes next, and which waiting prompts it starts: the scheduling policy alone,
 * with no engine, no clock and no threads of its own, so that a test can drive it step by step.
 *
 * <p>Design note. A step computes one chunk of at most {@code chunkTokens} tokens of one running prompt, so a prompt
 * that arrives waits for at most one chunk before it can start. Which prompt gets the chunk is decided by cost, not
 * by turn: every prompt has a <em>key</em>, its remaining tokens minus its <em>credit</em>, and the smallest key
 * goes first (ties: the earlier arrival). Credit is aging: whenever the worker computes {@code n} tokens for one
 * prompt, every other prompt, running or waiting, gains {@code n} tokens of credit, and the prompt that was served
 * drops back to none. So short prompts go first (shortest remaining first), and a long one that is passed over
 * gains exactly what the others take: after others have computed as many tokens as it has left, its key is below
 * any newcomer's and it is served. Nobody is starved, and nobody waits behind a giant for more than the giant's
 * own length in other work.
 *
 * <p>Waiting prompts start in key order while fewer than {@code maxRunning} run and the KV pool can hold their
 * whole prompt on top of what the running prompts will still allocate (their <em>outstanding</em> pages); a
 * running prompt can therefore always get the pages of its next chunk, and prompts wait for pages rather than
 * failing. A waiting prompt that does not fit may be passed over by smaller ones that do, until its key reaches
 * zero (it has waited for as many tokens of others' work as it is long); from then on nobody passes it, and it
 * starts as soon as the pages it needs come back.
 *
 * <p>Thread-safe: admission and cancels run on any thread, the engine loop asks for the next chunk; every method
 * holds the policy's lock for a few list operations and never while anything computes.
 *
 * @param <T> what the worker schedules (its job)
 */
final class PrefillPolicy<T> {

    /** One prompt in the policy's hands. Fields are guarded by the policy's lock. */
    static final class Entry<T> {
        final T job;
        final int tokens;
        final int pages;
        final long queuedNanos;
        private final long arrival;
        private int done;
        private long credit;
        private boolean running;

        private Entry(T job, int tokens, int pages, long queuedNanos, long arrival) {
            this.job = job;
            this.tokens = tokens;
            this.pages = pages;
            this.queuedNanos = queuedNanos;
            this.arrival = arrival;
        }

        private int remaining() {
            return tokens - done;
        }

        private long key() {
            return remaining() - credit;
        }

        @Override
        public String toString() {
            return "Entry[" + job + " " + done + "/" + tokens + " credit=" + credit + (running ? " running" : "") + "]";
        }
    }

    private static final Comparator<Entry<?>> ORDER = Comparator.<Entry<?>>comparingLong(Entry::key)
            .thenComparingLong(e -> e.arrival);

    private final int maxRunning;
    private final int chunkTokens;
    private final int pageTokens;
    private final int capacity;
    private final List<Entry<T>> waiting = new ArrayList<>();
    private final List<Entry<T>> running = new ArrayList<>();
    private long arrivals;

    /**
     * @param maxRunning  prompts in prefill at once
     * @param chunkTokens the largest chunk of one step
     * @param pageTokens  positions per KV page
     * @param capacity    waiting prompts at most
     */
    PrefillPolicy(int maxRunning, int chunkTokens, int pageTokens, int capacity) {
        this.maxRunning = maxRunning;
        this.chunkTokens = chunkTokens;
        this.pageTokens = pageTokens;
        this.capacity = capacity;
    }

    int pagesFor(int tokens) {
        return (tokens + pageTokens - 1) / pageTokens;
    }

    /** Queues a prompt of {@code tokens} tokens; null when {@code capacity} prompts already wait. */
    synchronized Entry<T> enqueue(T job, int tokens, long nowNanos) {
        if (waiting.size() >= capacity) {
            return null;
        }
        Entry<T> e = new Entry<>(job, tokens, pagesFor(tokens), nowNanos, arrivals++);
        waiting.add(e);
        return e;
    }

    /** Takes a waiting or running prompt out (cancelled, failed, finished); whether it was still here. */
    synchronized boolean remove(Entry<T> e) {
        return e.running ? running.remove(e) : waiting.remove(e);
    }

    /**
     * Starts waiting prompts in key order while a running slot is free and the pool holds their pages, passing over
     * one that does not fit only while its key is positive; returns those started, in order.
     *
     * @param freePages pages the KV pool has free now
     */
    synchronized List<Entry<T>> admit(int freePages) {
        List<Entry<T>> started = new ArrayList<>();
        if (waiting.isEmpty() || running.size() >= maxRunning) {
            return started;
        }
        long available = freePages - outstandingPages();
        List<Entry<T>> candidates = new ArrayList<>(waiting);
        candidates.sort(ORDER);
        for (Entry<T> e : candidates) {
            if (running.size() >= maxRunning) {
                break;
            }
            if (e.pages <= available) {
                waiting.remove(e);
                e.running = true;
                running.add(e);
                available -= e.pages;
                started.add(e);
            } else if (e.key() <= 0) {
                break; // aged: nobody passes it any more; it starts when its pages come back
            }
        }
        return started;
    }

    /** Pages the running prompts have yet to allocate for their remaining chunks. */
    private long outstandingPages() {
        long pages = 0;
        for (Entry<T> e : running) {
            pages += e.pages - pagesFor(e.done);
        }
        return pages;
    }

    /**
     * The running prompt whose chunk comes next: the smallest key among those whose next chunk's pages are free;
     * null when none runs or none can get its pages now.
     */
    synchronized Entry<T> next(int freePages) {
        Entry<T> best = null;
        for (Entry<T> e : running) {
            int needed = pagesFor(chunkEnd(e)) - pagesFor(e.done);
            if (needed <= freePages && (best == null || ORDER.compare(e, best) < 0)) {
                best = e;
            }
        }
        return best;
    }

    /** Where the next chunk of {@code e} ends: at most {@code chunkTokens} past what is done. */
    synchronized int chunkEnd(Entry<T> e) {
        return Math.min(e.done + chunkTokens, e.tokens);
    }

    /** Tokens of {@code e} computed so far. */
    synchronized int done(Entry<T> e) {
        return e.done;
    }

    /**
     * Records that the first {@code tokens} tokens of a prompt that just started came from the prefix cache: done
     * without being computed, so nobody's credit grows for them.
     */
    synchronized void reused(Entry<T> e, int tokens) {
        if (tokens < 0 || e.done + tokens > e.tokens) {
            throw new IllegalArgumentException("cannot reuse " + tokens + " tokens of " + e);
        }
        e.done += tokens;
    }

    /** Records a chunk of {@code tokens} computed for {@code e}: its credit is spent, everyone else's grows. */
    synchronized void computed(Entry<T> e, int tokens) {
        e.done += tokens;
        e.credit = 0;
        for (Entry<T> other : running) {
            if (other != e) {
                other.credit += tokens;
            }
        }
        for (Entry<T> other : waiting) {
            other.credit += tokens;
        }
    }

    /** Takes out and returns the waiting prompts queued before {@code deadlineNanos}: past their maximum wait. */
    synchronized List<Entry<T>> expire(long deadlineNanos) {
        List<Entry<T>> expired = new ArrayList<>();
        for (Entry<T> e : waiting) {
            if (e.queuedNanos - deadlineNanos < 0) {
                expired.add(e);
            }
        }
        waiting.removeAll(expired);
        return expired;
    }

    /**
     * Tokens the worker computes before a new prompt of {@code tokens} tokens starts: the remaining tokens of every
     * prompt whose key is at most {@code tokens} (those that go first).
     */
    synchronized long tokensAhead(int tokens) {
        long ahead = 0;
        for (Entry<T> e : running) {
            ahead += e.key() <= tokens ? e.remaining() : 0;
        }
        for (Entry<T> e : waiting) {
            ahead += e.key() <= tokens ? e.remaining() : 0;
        }
        return ahead;
    }

    /** Tokens left to compute for every prompt in the policy's hands: the queue's remaining work. */
    synchronized long remainingTokens() {
        long left = 0;
        for (Entry<T> e : running) {
            left += e.remaining();
        }
        for (Entry<T> e : waiting) {
            left += e.remaining();
        }
        return left;
    }

    synchronized int waiting() {
        return waiting.size();
    }

    synchronized int running() {
        return running.size();
    }

    /** The running prompts, in admission order (a snapshot). */
    synchronized List<Entry<T>> runningEntries() {
        return List.copyOf(running);
    }
}
