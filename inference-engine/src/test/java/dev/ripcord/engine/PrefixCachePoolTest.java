package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * The pool's reference counts and its prefix cache: a page returns to the free stack only when no request and no
 * cache entry holds it; cached pages are evicted least recently used first, tail of a chain before its head, and
 * only when an allocation needs a page; a double free and a free of a page only the cache holds are caught where
 * they happen.
 */
class PrefixCachePoolTest {
    static final KvLayout LAYOUT = new KvLayout(16, 1, 1, 16);

    /** A chain of {@code n} pages cached under keys {@code base, base+1, ...}, released by its request. */
    private static int[] cachedChain(KvPagePool pool, long base, int n) {
        int[] pages = new int[n];
        pool.allocate(n, pages);
        KvPagePool.CachedPage parent = null;
        for (int i = 0; i < n; i++) {
            parent = pool.store(pages[i], base + i, tokens(base, i), parent);
            assertThat(parent).isNotNull();
        }
        pool.freeAll(pages, n);
        return pages;
    }

    private static int[] tokens(long base, int page) {
        int[] t = new int[16];
        java.util.Arrays.fill(t, (int) base * 100 + page);
        return t;
    }

    private static int[] prompt(long base, int pages) {
        int[] t = new int[pages * 16 + 1];
        for (int i = 0; i < pages; i++) {
            System.arraycopy(tokens(base, i), 0, t, i * 16, 16);
        }
        return t;
    }

    private static long[] keys(long base, int pages) {
        long[] k = new long[pages];
        for (int i = 0; i < pages; i++) {
            k[i] = base + i;
        }
        return k;
    }

    @Test
    void aCachedPageOutlivesItsRequestAndIsNotALeak() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 8, arena, Integer.MAX_VALUE);
            cachedChain(pool, 10, 3);
            assertThat(pool.pagesLive()).as("no request holds a page").isZero();
            assertThat(pool.pagesEvictable()).isEqualTo(3);
            assertThat(pool.pagesCached()).isEqualTo(3);
            assertThat(pool.pagesFree()).isEqualTo(5);
            assertThat(pool.pagesAllocatable()).as("free and evictable: what an allocation may take").isEqualTo(8);
        }
    }

    @Test
    void aHitHoldsThePagesAndTheLastReleaseMakesThemEvictableAgain() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 8, arena, Integer.MAX_VALUE);
            int[] chain = cachedChain(pool, 10, 3);
            List<KvPagePool.CachedPage> a = pool.match(prompt(10, 3), keys(10, 3), 3);
            List<KvPagePool.CachedPage> b = pool.match(prompt(10, 3), keys(10, 3), 2);
            assertThat(a).hasSize(3);
            assertThat(b).hasSize(2);
            assertThat(pool.references(chain[0])).isEqualTo(2);
            assertThat(pool.references(chain[2])).isEqualTo(1);
            assertThat(pool.pagesEvictable()).isZero();
            assertThat(pool.pagesLive()).isEqualTo(3);
            pool.freeAll(new int[] {chain[0], chain[1], chain[2]}, 3);
            assertThat(pool.pagesEvictable()).as("still held by the second hit").isEqualTo(1);
            pool.freeAll(new int[] {chain[0], chain[1]}, 2);
            assertThat(pool.pagesEvictable()).isEqualTo(3);
            assertThat(pool.pagesFree()).as("a cached page never returns to the free stack by a release")
                    .isEqualTo(5);
        }
    }

    @Test
    void evictionHappensOnlyWhenAnAllocationNeedsAPageOldestChainFirstTailBeforeHead() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 6, arena, Integer.MAX_VALUE);
            List<Long> removed = new ArrayList<>();
            pool.listener(new PrefixCacheListener() {
                @Override
                public void stored(long[] keys) {
                }

                @Override
                public void removed(long[] keys) {
                    for (long k : keys) {
                        removed.add(k);
                    }
                }

                @Override
                public void cleared() {
                }
            });
            cachedChain(pool, 10, 3); // keys 10, 11, 12
            cachedChain(pool, 20, 3); // keys 20, 21, 22
            assertThat(pool.pagesFree()).isZero();
            // a hit on the first chain's head makes it younger than the whole second chain
            pool.freeAll(pool.match(prompt(10, 1), keys(10, 1), 1).stream().mapToInt(c -> c.page).toArray(), 1);

            int[] two = new int[2];
            pool.allocate(2, two);
            assertThat(removed).as("the first chain's tail, then the second chain's tail").containsExactly(12L, 11L);
            pool.allocate(2, new int[2]);
            assertThat(removed).containsExactly(12L, 11L, 22L, 21L);
            assertThat(pool.match(prompt(10, 1), keys(10, 1), 1)).as("the touched head survived").hasSize(1);
            assertThatThrownBy(() -> pool.allocate(2, new int[2])).as("only one page is evictable; a held one is "
                    + "never evicted").isInstanceOf(KvPoolExhaustedException.class);
            assertThat(removed).as("a failed allocation evicts nothing").hasSize(4);
        }
    }

    @Test
    void theCacheKeepsAtMostItsBudgetOfUnheldPagesAndNoneWhenOff() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 8, arena, 2);
            cachedChain(pool, 10, 2);
            int[] pages = new int[2];
            pool.allocate(2, pages);
            KvPagePool.CachedPage head = pool.store(pages[0], 30, tokens(30, 0), null);
            pool.store(pages[1], 31, tokens(30, 1), head);
            pool.freeAll(pages, 2);
            assertThat(pool.pagesEvictable()).isEqualTo(2);
            assertThat(pool.match(prompt(30, 2), keys(30, 2), 2)).as("the newer chain is kept").hasSize(2);
        }
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool off = new KvPagePool(LAYOUT, 4, arena, 0);
            int page = off.allocate();
            assertThat(off.store(page, 1, tokens(1, 0), null)).isNull();
            off.free(page);
            assertThat(off.pagesFree()).isEqualTo(4);
            assertThat(off.pagesCached()).isZero();
        }
    }

    @Test
    void aDoubleFreeAndAFreeOfAPageOnlyTheCacheHoldsAreCaughtWhereTheyHappen() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 4, arena, Integer.MAX_VALUE);
            int[] chain = cachedChain(pool, 10, 1);
            assertThatThrownBy(() -> pool.free(chain[0])).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("held only by the prefix cache");
            assertThat(pool.pagesEvictable()).as("the cache's page is untouched").isEqualTo(1);
            int page = pool.allocate();
            pool.free(page);
            assertThatThrownBy(() -> pool.free(page)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("not live");
            assertThatThrownBy(() -> pool.freeAll(new int[] {chain[0]}, 1)).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    void aPageMatchesOnlyWithItsTokensAndItsParent() {
        try (Arena arena = Arena.ofConfined()) {
            KvPagePool pool = new KvPagePool(LAYOUT, 8, arena, Integer.MAX_VALUE);
            cachedChain(pool, 10, 2);
            int[] wrongTokens = prompt(10, 2);
            wrongTokens[20] = 7;
            assertThat(pool.match(wrongTokens, keys(10, 2), 2)).as("the second page's tokens differ").hasSize(1);
            pool.freeAll(new int[] {0}, 0);
            // the same key for another prompt's page, as a collision would give
            int page = pool.allocate();
            assertThat(pool.store(page, 10, tokens(99, 0), null)).as("the key is taken by other tokens").isNull();
            pool.free(page);
        }
    }
}
