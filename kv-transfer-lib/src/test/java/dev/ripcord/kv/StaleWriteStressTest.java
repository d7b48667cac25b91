package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.testing.KvLeakCheck;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Thousands of sessions under concurrency, aborted at random points from random sides, with freed receive pages
 * reused at once (a stack: the page freed last is handed out first).
 *
 * <p>Every 8-byte word written names its session ({@link Patterns}). Free pages are poisoned. So:
 * <ul>
 *   <li>a COMPLETED session must hold exactly its sender's stream (checksum of every word);</li>
 *   <li>an ABORTED session's pages may hold poison or its own words, nothing else;</li>
 *   <li>a free page must still be poison when it is handed out again, and every page is poison at the end.</li>
 * </ul>
 * A byte of an aborted session landing after release shows up as a foreign word in a later owner, or as a
 * non-poison word in a free page. Senders scribble another stream over their source pages the moment a send
 * session is released, so a transport that still read source memory after release would deliver foreign words
 * too. Seed: {@code -Dstress.seed=...} to replay.
 */
@ExtendWith(KvLeakCheck.class)
class StaleWriteStressTest {
    static final int POOL_PAGES = 1024;
    static final int MAX_SESSIONS = 2500;
    static final int CONCURRENCY = 24;
    static final long SCRIBBLE = 1L << 40;

    TransferAgent decode;
    TransferAgent prefill;

    @AfterEach
    void close() {
        if (prefill != null) {
            prefill.close();
        }
        if (decode != null) {
            decode.close();
        }
    }

    /** Test-side page allocator: LIFO so freed pages are reused immediately. */
    static final class Pages {
        private final ArrayDeque<Integer> free = new ArrayDeque<>();

        Pages(int n, Random rnd) {
            List<Integer> all = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                all.add(i);
            }
            Collections.shuffle(all, rnd);
            all.forEach(free::push);
        }

        synchronized List<Integer> take(int n) throws InterruptedException {
            while (free.size() < n) {
                wait();
            }
            List<Integer> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add(free.pop());
            }
            return out;
        }

        synchronized void give(List<Integer> pages) {
            pages.forEach(free::push);
            notifyAll();
        }
    }

    /**
     * 4 KiB pages on both backends; and 64 KiB pages over TCP, so most payload bytes are read by the kernel
     * straight into the destination pages (direct landing) while aborts race with those reads.
     */
    static Stream<Arguments> runs() {
        return Stream.of(Arguments.of(Backend.TCP, 4096, 2500), Arguments.of(Backend.SHM, 4096, 2500),
                Arguments.of(Backend.TCP, 64 * 1024, 600));
    }

    int page;
    int sessions;

    @ParameterizedTest(name = "{0}, {1}-byte pages, {2} sessions")
    @MethodSource("runs")
    void randomAbortsFromRandomSidesNeverLeakBytesIntoLaterOwners(Backend backend, int pageBytes, int count)
            throws Exception {
        page = pageBytes;
        sessions = count;
        long seed = Long.getLong("stress.seed", System.nanoTime());
        System.out.printf("%s stress seed %d%n", backend, seed);
        Random master = new Random(seed);
        decode = TransferAgent.start(TransferAgentOptions.defaults("decode").withMaxPieceBytes(page));
        prefill = TransferAgent.start(TransferAgentOptions.defaults("prefill").withBackend(backend)
                .withMaxPieceBytes(page).withShmPieceBytes(page));
        KvRegion pool = decode.allocateRegion((long) POOL_PAGES * page);
        KvRegion src = prefill.allocateRegion((long) POOL_PAGES * page);
        Patterns.poison(pool.segment(), 0, pool.byteSize());
        Pages rxPages = new Pages(POOL_PAGES, master);
        Pages txPages = new Pages(POOL_PAGES, master);
        Queue<String> violations = new ConcurrentLinkedQueue<>();
        AtomicInteger completed = new AtomicInteger();
        AtomicInteger aborted = new AtomicInteger();
        Semaphore inFlight = new Semaphore(CONCURRENCY);
        ExecutorService abortThreads = Executors.newFixedThreadPool(2);

        try (ExecutorService requests = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < sessions && violations.size() < 20; i++) {
                long tag = i + 1;
                long sessionSeed = master.nextLong();
                inFlight.acquire();
                requests.execute(() -> {
                    try {
                        oneSession(tag, new Random(sessionSeed), pool, src, rxPages, txPages, abortThreads,
                                violations, completed, aborted);
                    } catch (Throwable t) {
                        violations.add("session " + tag + " failed: " + t);
                    } finally {
                        inFlight.release();
                    }
                });
            }
        }
        abortThreads.shutdown();
        assertThat(violations).as("%s seed %d", backend, seed).isEmpty();
        assertThat(Patterns.firstNonPoison(pool.segment(), 0, pool.byteSize())).as("a free page was written")
                .isEqualTo(-1);
        System.out.printf("%s: %d completed, %d aborted%n", backend, completed.get(), aborted.get());
        assertThat(completed.get() + aborted.get()).isEqualTo(sessions);
        assertThat(completed.get()).isGreaterThan(sessions / 10);
        assertThat(aborted.get()).isGreaterThan(sessions / 10);
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
        assertThat(decode.stats().liveSessions()).isZero();
        assertThat(prefill.stats().liveSessions()).isZero();
        assertThat(Internals.region(pool).references()).isZero();
        assertThat(Internals.region(src).references()).isZero();
        pool.close();
        src.close();
    }

    private record Plan(int pages, boolean abort, int abortAt, boolean receiverAborts, boolean async,
                        long delayNanos) {
    }

    /**
     * One request: the decode side and the prefill side run on different threads, like the two services, so
     * decode recycles its pages the moment its session is released while prefill may still be mid-send.
     */
    private void oneSession(long tag, Random rnd, KvRegion pool, KvRegion src, Pages rxPages, Pages txPages,
                            ExecutorService abortThreads, Queue<String> violations, AtomicInteger completed,
                            AtomicInteger aborted) throws Exception {
        int k = 1 + rnd.nextInt(8);
        // Abort never (about a third), or at point -1 (before the first write) .. k (after complete()), from a
        // random side, inline or from another thread after a random sub-millisecond delay.
        boolean abort = rnd.nextInt(3) != 0;
        Plan plan = new Plan(k, abort, abort ? rnd.nextInt(k + 2) - 1 : Integer.MIN_VALUE, rnd.nextBoolean(),
                rnd.nextInt(3) == 0, rnd.nextInt(200_000));
        long pacing = rnd.nextLong();
        CompletableFuture<ReceiveDescriptor> handoff = new CompletableFuture<>();
        CompletableFuture<SessionState> prefillEnd = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                prefillEnd.complete(prefillSide(tag, plan, new Random(pacing), handoff, src, txPages,
                        abortThreads));
            } catch (Throwable t) {
                prefillEnd.completeExceptionally(t);
            }
        });
        SessionState rxEnd = decodeSide(tag, plan, handoff, pool, rxPages, abortThreads, violations);
        SessionState txEnd = prefillEnd.get(60, TimeUnit.SECONDS);
        if (rxEnd != txEnd) {
            violations.add("session " + tag + ": receiver " + rxEnd + " but sender " + txEnd);
        }
        (rxEnd == SessionState.COMPLETED ? completed : aborted).incrementAndGet();
    }

    private SessionState decodeSide(long tag, Plan plan, CompletableFuture<ReceiveDescriptor> handoff,
                                    KvRegion pool, Pages rxPages, ExecutorService abortThreads,
                                    Queue<String> violations) throws Exception {
        List<Integer> dst = rxPages.take(plan.pages());
        for (int p : dst) {
            if (Patterns.firstNonPoison(pool.segment(), (long) p * page, page) >= 0) {
                violations.add("free page " + p + " was written while free (seen by session " + tag + ")");
            }
        }
        List<ByteRange> targets = dst.stream().map(p -> new ByteRange((long) p * page, page)).toList();
        AtomicInteger landed = new AtomicInteger();
        ReceiveSession rx = decode.openReceive("stress-" + tag, pool, targets, new ReceiveListener() {
            @Override
            public void onChunkLanded(ReceiveSession session, long dstOffset, long length) {
                landed.incrementAndGet();
            }
        });
        handoff.complete(rx.descriptor());
        if (plan.abort() && plan.receiverAborts()) {
            if (plan.async()) {
                abortThreads.execute(() -> {
                    LockSupport.parkNanos(plan.delayNanos());
                    rx.abort("stress");
                });
            } else {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (landed.get() < plan.abortAt() && rx.state().isAbortable() && System.nanoTime() < deadline) {
                    LockSupport.parkNanos(20_000);
                }
                rx.abort("stress");
            }
        }
        SessionState end = rx.released().get(30, TimeUnit.SECONDS);
        if (end == SessionState.COMPLETED) {
            if (ByteBuffer.wrap(rx.completion().join()).getLong() != tag) {
                violations.add("session " + tag + ": wrong metadata");
            }
            check(pool, dst, tag, true, violations);
            Thread.yield(); // decode "uses" the pages; a late write would land now
            check(pool, dst, tag, true, violations);
        } else {
            check(pool, dst, tag, false, violations);
        }
        for (int p : dst) {
            Patterns.poison(pool.segment(), (long) p * page, page);
        }
        rxPages.give(dst); // reused at once, whatever the sender is still doing
        return end;
    }

    private SessionState prefillSide(long tag, Plan plan, Random rnd, CompletableFuture<ReceiveDescriptor> handoff,
                                     KvRegion src, Pages txPages, ExecutorService abortThreads) throws Exception {
        ReceiveDescriptor d = ReceiveDescriptor.parse(handoff.get(30, TimeUnit.SECONDS).encode());
        List<Integer> from = txPages.take(plan.pages());
        for (int j = 0; j < plan.pages(); j++) {
            Patterns.fill(src.segment(), (long) from.get(j) * page, page, tag, (long) j * page);
        }
        SendSession tx = prefill.connect(d);
        boolean senderAborts = plan.abort() && !plan.receiverAborts();
        Runnable abort = () -> {
            if (plan.async()) {
                abortThreads.execute(() -> {
                    LockSupport.parkNanos(plan.delayNanos());
                    tx.abort("stress");
                });
            } else {
                tx.abort("stress");
            }
        };
        for (int j = 0; j < plan.pages(); j++) {
            if (senderAborts && plan.abortAt() == j - 1) {
                abort.run();
            }
            tx.send(src, (long) from.get(j) * page, page, (long) j * page);
            if (rnd.nextInt(3) == 0) {
                LockSupport.parkNanos(rnd.nextInt(50_000)); // a prefill chunk takes a while to compute
            }
        }
        tx.complete(ByteBuffer.allocate(8).putLong(tag).array());
        if (senderAborts && plan.abortAt() >= plan.pages() - 1) {
            abort.run();
        }
        SessionState end = tx.released().get(30, TimeUnit.SECONDS);
        // The sender may reuse its pages now: scribble them, so a transport still reading them would be caught.
        for (int p : from) {
            Patterns.fill(src.segment(), (long) p * page, page, tag + SCRIBBLE, 0);
        }
        txPages.give(from);
        return end;
    }

    /** Whose word is this (searching every session's stream at this offset within a page)? */
    String identify(long word, long offsetInPage) {
        if (word == Patterns.POISON) {
            return "poison";
        }
        for (long t = 1; t <= MAX_SESSIONS; t++) {
            for (int j = 0; j < 8; j++) {
                if (Patterns.word(t, (long) j * page + offsetInPage) == word) {
                    return "session " + t + "'s chunk " + j;
                }
            }
            if (Patterns.word(t + SCRIBBLE, offsetInPage) == word) {
                return "session " + t + "'s SCRIBBLE (source reused after release)";
            }
        }
        return "unknown word " + Long.toHexString(word);
    }

    private void check(KvRegion pool, List<Integer> dst, long tag, boolean completed,
                              Queue<String> violations) {
        for (int j = 0; j < dst.size(); j++) {
            long at = (long) dst.get(j) * page;
            long bad = completed ? Patterns.firstMismatch(pool.segment(), at, page, tag, (long) j * page)
                    : Patterns.firstForeign(pool.segment(), at, page, tag, (long) j * page);
            if (bad >= 0) {
                long word = pool.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, at + bad);
                violations.add("session " + tag + " (" + (completed ? "completed" : "aborted") + "): page "
                        + dst.get(j) + " (its chunk " + j + ") word at +" + bad + " is not " + (completed
                        ? "its sender's" : "poison or its own") + " byte but " + identify(word, bad));
            }
        }
    }
}
