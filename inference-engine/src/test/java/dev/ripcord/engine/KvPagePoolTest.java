package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

class KvPagePoolTest {
    static final KvLayout LAYOUT = new KvLayout(16, 2, 2, 16);

    @Test
    void allocationAndFreeAreCountedInPagesAndBytes() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 10, arena);
            int[] pages = new int[4];
            pool.allocate(4, pages);
            assertThat(pages).containsExactly(0, 1, 2, 3);
            assertThat(pool.pagesLive()).isEqualTo(4);
            assertThat(pool.bytesLive()).isEqualTo(4 * LAYOUT.pageBytes());
            assertThat(pool.pagesFree()).isEqualTo(6);
            for (int p : pages) {
                pool.free(p);
            }
            assertThat(pool.pagesLive()).isZero();
            assertThat(pool.bytesLive()).isZero();
        }
    }

    @Test
    void freeingAPageTwiceIsRejected() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 4, arena);
            int page = pool.allocate();
            pool.free(page);
            assertThatThrownBy(() -> pool.free(page)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("not live");
            assertThatThrownBy(() -> pool.free(99)).isInstanceOf(IllegalArgumentException.class);
            assertThat(pool.pagesLive()).isZero();
        }
    }

    @Test
    void anAllocationThatDoesNotFitAllocatesNothing() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 5, arena);
            int[] three = new int[3];
            pool.allocate(3, three);
            KvPoolExhaustedException e = org.junit.jupiter.api.Assertions.assertThrows(
                    KvPoolExhaustedException.class, () -> pool.allocate(3, new int[3]));
            assertThat(e.requested()).isEqualTo(3);
            assertThat(e.free()).isEqualTo(2);
            assertThat(e.getStackTrace()).as("an expected condition is stackless").isEmpty();
            assertThat(pool.pagesLive()).isEqualTo(3);
            for (int p : three) {
                pool.free(p);
            }
        }
    }

    @Test
    void concurrentAllocateAndFreeNeverHandOutALivePageTwice() throws Exception {
        try (Arena arena = Arena.ofShared()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 64, arena);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    List<Integer> mine = new ArrayList<>();
                    try {
                        for (int i = 0; i < 20_000; i++) {
                            if (mine.size() < 16 && random.nextBoolean()) {
                                try {
                                    int page = pool.allocate();
                                    // Ownership check: a page handed to two owners would be stamped twice.
                                    MemorySegments.stamp(pool, page, Thread.currentThread().threadId());
                                    mine.add(page);
                                } catch (KvPoolExhaustedException full) {
                                    Thread.onSpinWait();
                                }
                            } else if (!mine.isEmpty()) {
                                int page = mine.remove(random.nextInt(mine.size()));
                                MemorySegments.checkStamp(pool, page, Thread.currentThread().threadId());
                                pool.free(page);
                            }
                        }
                        mine.forEach(pool::free);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            assertThat(failure.get()).isNull();
            assertThat(pool.pagesLive()).isZero();
        }
    }

    /** Writes and checks an owner stamp in a page's trailer, which carries no KV data. */
    static final class MemorySegments {
        static void stamp(KvPagePool pool, int page, long owner) {
            pool.page(page).set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, LAYOUT.payloadBytes(), owner);
        }

        static void checkStamp(KvPagePool pool, int page, long owner) {
            long found = pool.page(page).get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, LAYOUT.payloadBytes());
            if (found != owner) {
                throw new AssertionError("page " + page + " stamped by " + found + ", expected " + owner);
            }
        }
    }
}
