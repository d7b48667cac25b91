package dev.ripcord.engine;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A fixed number of KV pages carved from <em>one contiguous</em> off-heap segment, so a transfer library can
 * register the whole pool as a single memory region and address page {@code p} at byte offset
 * {@code p · pageBytes()}; and the prefix cache that keeps complete pages after the requests that wrote them are
 * done.
 *
 * <h2>References</h2>
 * The pool is the one owner of every page and counts its references: each holder (a sequence's page table) holds
 * one, taken by {@link #allocate} or by a prefix-cache hit ({@link #match}), and drops it with {@link #free}; the
 * cache holds one more while a page is cached. A page returns to the free stack only where its count reaches zero:
 * no request holds it and no cache entry does. Freeing a page nobody holds, or a page that only the cache holds,
 * throws there and then (a double free, or a free of a cached page). {@link #pagesLive()} counts pages some request
 * holds; {@link #pagesEvictable()} pages only the cache holds; together with {@link #pagesFree()} they make
 * {@link #pageCount()}. A leak is a live page once every request has ended; an evictable page is not one.
 *
 * <h2>The prefix cache</h2>
 * A cache entry is a complete page (every layer's keys and values written for every position) under the chained
 * key its request gave ({@code dev.ripcord.protocol.prefix.PrefixKeys}), with the page's token IDs and the entry of
 * the page before it. Keys are opaque here: a lookup compares the page's token IDs and the identity of its parent
 * entry on every hit, so a key collision can never serve another prompt's KV. Pages no request holds are evicted
 * least recently used first, and only when an allocation finds no free page (or when more than
 * {@code maxEvictable} would be kept): the whole pool is one budget for live and cached pages. Released pages join
 * the eviction order tail first, so that the head of a chain, which every hit of a descendant touches too, is
 * always younger than its descendants: the tail of a chain goes before its head.
 *
 * <p>Allocation is LIFO over a free stack that starts in index order, so a fresh pool hands out pages 0, 1, 2, ... .
 * The memory belongs to the engine's arena, or to whoever supplied it ({@link KvPoolMemory}, e.g. a transfer
 * agent's shared-memory region): either way the segment stays valid until the engine is closed, and pages are not
 * zeroed on reuse.
 *
 * <p>Thread-safe: every operation takes a short monitor that is never held while anything computes. Cache changes
 * are told to the {@link PrefixCacheListener} after the monitor is released, in the order they happened.
 */
public final class KvPagePool {
    private final KvLayout layout;
    private final int pageCount;
    private final long pageBytes;
    private final MemorySegment segment;
    private final int[] freeStack;
    /** Request references per page; 0 for a free page and for one only the cache holds. */
    private final int[] refs;
    private int freeCount;
    private int liveCount;

    /** The cache entry of each page, or null. */
    private final CachedPage[] cachedByPage;
    private final Map<Long, CachedPage> cachedByKey = new HashMap<>();
    /** Cached pages no request holds, least recently released or hit first. */
    private final LinkedHashSet<CachedPage> evictable = new LinkedHashSet<>();
    private final int maxEvictable;
    private long evictions;
    /** Changes made under the monitor, told to the listener after it ({@link #publish()}). */
    private final List<Change> unpublished = new ArrayList<>();
    private final ReentrantLock publishing = new ReentrantLock();
    private volatile PrefixCacheListener listener = PrefixCacheListener.NONE;

    KvPagePool(KvLayout layout, int pageCount, Arena arena) {
        this(layout, pageCount, arena.allocate(bytesFor(layout, pageCount), 4096));
    }

    KvPagePool(KvLayout layout, int pageCount, MemorySegment memory) {
        this(layout, pageCount, memory, Integer.MAX_VALUE);
    }

    KvPagePool(KvLayout layout, int pageCount, Arena arena, int maxEvictable) {
        this(layout, pageCount, arena.allocate(bytesFor(layout, pageCount), 4096), maxEvictable);
    }

    /**
     * A pool in {@code memory}, which someone else owns (see {@link KvPoolMemory}): its first
     * {@code pageCount · pageBytes} bytes become the pages. The prefix cache keeps at most {@code maxEvictable}
     * pages no request holds; 0 turns it off.
     */
    KvPagePool(KvLayout layout, int pageCount, MemorySegment memory, int maxEvictable) {
        long bytes = bytesFor(layout, pageCount);
        Checks.requireArgument(memory.isNative(), "KV pool memory must be native");
        Checks.requireArgument(memory.byteSize() >= bytes, "KV pool memory of %s bytes is smaller than %s pages of %s",
                memory.byteSize(), pageCount, layout.pageBytes());
        Checks.requireArgument(memory.address() % KvPoolMemory.ALIGNMENT == 0,
                "KV pool memory at 0x%s is not %s-byte aligned", Long.toHexString(memory.address()),
                KvPoolMemory.ALIGNMENT);
        Checks.requireArgument(maxEvictable >= 0, "maxEvictable must be >= 0, got %s", maxEvictable);
        this.layout = layout;
        this.pageCount = pageCount;
        this.pageBytes = layout.pageBytes();
        this.segment = memory.asSlice(0, bytes);
        this.freeStack = new int[pageCount];
        for (int i = 0; i < pageCount; i++) {
            freeStack[i] = pageCount - 1 - i;
        }
        this.freeCount = pageCount;
        this.refs = new int[pageCount];
        this.cachedByPage = new CachedPage[pageCount];
        this.maxEvictable = maxEvictable;
    }

    /** Bytes a pool of {@code pageCount} pages of {@code layout} occupies. */
    static long bytesFor(KvLayout layout, int pageCount) {
        Checks.requireArgument(pageCount > 0, "a KV page pool needs at least one page, got %s", pageCount);
        return layout.pageBytes() * pageCount;
    }

    public KvLayout layout() {
        return layout;
    }

    /** Total pages in the pool. */
    public int pageCount() {
        return pageCount;
    }

    /** Bytes per page, {@link KvLayout#pageBytes()}. */
    public long pageBytes() {
        return pageBytes;
    }

    /** The whole pool: {@code pageCount · pageBytes} bytes, 4096-byte aligned. */
    public MemorySegment segment() {
        return segment;
    }

    /** Byte offset of page {@code page} in {@link #segment()}. */
    public long offsetOf(int page) {
        Checks.requireArgument(page >= 0 && page < pageCount, "page %s outside pool of %s", page, pageCount);
        return page * pageBytes;
    }

    /** The bytes of page {@code page}. */
    public MemorySegment page(int page) {
        return segment.asSlice(offsetOf(page), pageBytes);
    }

    /** Whether the prefix cache keeps pages at all. */
    public boolean cacheEnabled() {
        return maxEvictable > 0;
    }

    void listener(PrefixCacheListener listener) {
        this.listener = listener == null ? PrefixCacheListener.NONE : listener;
    }

    /**
     * Allocates {@code n} pages, all or nothing, into {@code out[0..n)}, each with one reference for the caller.
     * Evicts cached pages no request holds when the free stack is short, least recently used first.
     *
     * @throws KvPoolExhaustedException if fewer than {@code n} pages are free or evictable (nothing is allocated
     *                                  and nothing evicted)
     */
    public void allocate(int n, int[] out) {
        synchronized (this) {
            Checks.requireArgument(n >= 0 && n <= out.length, "cannot allocate %s pages into %s slots", n,
                    out.length);
            if (n > pagesAllocatable()) {
                throw new KvPoolExhaustedException(n, pagesAllocatable(), pageCount);
            }
            while (freeCount < n) {
                evict(evictable.getFirst());
            }
            for (int i = 0; i < n; i++) {
                int page = freeStack[--freeCount];
                refs[page] = 1;
                liveCount++;
                out[i] = page;
            }
        }
        publish();
    }

    /** Allocates one page. @throws KvPoolExhaustedException if none is free or evictable */
    public int allocate() {
        int[] one = new int[1];
        allocate(1, one);
        return one[0];
    }

    /**
     * Drops one reference to {@code page}. Where none is left the page returns to the free stack, or, when cached,
     * becomes evictable (the most recently used).
     *
     * @throws IllegalStateException if no request holds the page: a double free, or a free of a page only the
     *                               cache holds
     */
    public void free(int page) {
        synchronized (this) {
            Checks.requireArgument(page >= 0 && page < pageCount, "page %s outside pool of %s", page, pageCount);
            Checks.requireState(refs[page] > 0, cachedByPage[page] != null
                    ? "page %s is held only by the prefix cache (a free of a cached page, or a double free)"
                    : "page %s is not live (double free?)", page);
            release(page);
            trim();
        }
        publish();
    }

    /**
     * Drops one reference to each of {@code pages[0..count)}, last first, so that a chain's tail ages first; all or
     * nothing: when one of them is not held, nothing is dropped and it throws.
     */
    void freeAll(int[] pages, int count) {
        synchronized (this) {
            for (int i = count - 1; i >= 0; i--) {
                int page = pages[i];
                Checks.requireState(refs[page] > 0, "page %s (index %s of its sequence) is not held: double free "
                        + "or a free of a cached page", page, i);
            }
            for (int i = count - 1; i >= 0; i--) {
                release(pages[i]);
            }
            trim();
        }
        publish();
    }

    private void release(int page) {
        if (--refs[page] > 0) {
            return;
        }
        liveCount--;
        CachedPage cached = cachedByPage[page];
        if (cached != null) {
            evictable.addLast(cached);
        } else {
            freeStack[freeCount++] = page;
        }
    }

    /** Keeps at most {@code maxEvictable} pages only the cache holds. */
    private void trim() {
        while (evictable.size() > maxEvictable) {
            evict(evictable.getFirst());
        }
    }

    private void evict(CachedPage entry) {
        evictable.remove(entry);
        cachedByPage[entry.page] = null;
        cachedByKey.remove(entry.key, entry);
        entry.evicted = true;
        freeStack[freeCount++] = entry.page;
        evictions++;
        unpublished.add(new Change(Change.Kind.REMOVED, entry.key));
    }

    /**
     * The longest cached chain matching {@code tokens}' first pages: page {@code i} matches when an entry is cached
     * under {@code keys[i]} with exactly the tokens {@code [i·T, (i+1)·T)} and the entry matched for page
     * {@code i - 1} as its parent. Takes a reference to each matched page for the caller, at most
     * {@code maxPages} of them.
     *
     * @return the matched entries, head first (their pages are held by the caller now)
     */
    synchronized List<CachedPage> match(int[] tokens, long[] keys, int maxPages) {
        int pageTokens = layout.pageTokens();
        List<CachedPage> matched = new ArrayList<>();
        CachedPage parent = null;
        for (int i = 0; i < Math.min(maxPages, keys.length); i++) {
            CachedPage entry = cachedByKey.get(keys[i]);
            if (entry == null || entry.parent != parent
                    || !Arrays.equals(entry.tokens, 0, pageTokens, tokens, i * pageTokens, (i + 1) * pageTokens)) {
                break;
            }
            matched.add(entry);
            parent = entry;
        }
        // Touched head last: an ancestor is never older than its descendants in the eviction order.
        for (int i = matched.size() - 1; i >= 0; i--) {
            CachedPage entry = matched.get(i);
            if (refs[entry.page]++ == 0) {
                evictable.remove(entry);
                liveCount++;
            }
        }
        return matched;
    }

    /**
     * Caches {@code page}, which the caller holds and whose KV is complete, under {@code key} with its
     * {@code tokens}, as the child of {@code parent} (null for the head of a chain).
     *
     * The listener hears of it at the next {@link #publish()} (the engine's, once a chunk's pages are stored; any
     * other change of the pool's).
     *
     * @return the entry for this prefix: the new one, an equal one already cached (the caller's page then stays
     *         private and is freed with its sequence), or null when the prefix cannot be linked (the cache is off,
     *         the parent was evicted, or another prompt's page holds the key)
     */
    CachedPage store(int page, long key, int[] tokens, CachedPage parent) {
        CachedPage entry;
        synchronized (this) {
            Checks.requireState(refs[page] > 0, "page %s is cached by a request that does not hold it", page);
            if (maxEvictable == 0 || (parent != null && parent.evicted)) {
                return null;
            }
            CachedPage existing = cachedByKey.get(key);
            if (existing != null) {
                return existing.parent == parent && Arrays.equals(existing.tokens, tokens) ? existing : null;
            }
            if (cachedByPage[page] != null) {
                return null; // cached already under another key: a page belongs to one chain
            }
            entry = new CachedPage(key, page, tokens, parent);
            cachedByKey.put(key, entry);
            cachedByPage[page] = entry;
            unpublished.add(new Change(Change.Kind.STORED, key));
        }
        return entry;
    }

    /**
     * Empties the cache: every page no request holds is freed at once; pages requests still hold stay theirs and
     * return to the free stack when freed. The listener is told {@code cleared()}.
     *
     * @return the pages that were cached
     */
    int clearCache() {
        int cleared;
        synchronized (this) {
            cleared = cachedByKey.size();
            for (Iterator<CachedPage> it = evictable.iterator(); it.hasNext(); ) {
                CachedPage entry = it.next();
                it.remove();
                freeStack[freeCount++] = entry.page;
            }
            for (CachedPage entry : cachedByKey.values()) {
                cachedByPage[entry.page] = null;
                entry.evicted = true;
            }
            cachedByKey.clear();
            unpublished.add(new Change(Change.Kind.CLEARED, 0));
        }
        publish();
        return cleared;
    }

    /** Tells the listener what changed, in order, outside the monitor; consecutive changes of a kind at once. */
    void publish() {
        publishing.lock();
        try {
            List<Change> changes;
            synchronized (this) {
                if (unpublished.isEmpty()) {
                    return;
                }
                changes = List.copyOf(unpublished);
                unpublished.clear();
            }
            PrefixCacheListener to = listener;
            for (int i = 0; i < changes.size(); ) {
                Change.Kind kind = changes.get(i).kind;
                int j = i;
                while (j < changes.size() && changes.get(j).kind == kind) {
                    j++;
                }
                long[] keys = new long[j - i];
                for (int k = i; k < j; k++) {
                    keys[k - i] = changes.get(k).key;
                }
                switch (kind) {
                    case STORED -> to.stored(keys);
                    case REMOVED -> to.removed(keys);
                    case CLEARED -> to.cleared();
                }
                i = kind == Change.Kind.CLEARED ? i + 1 : j;
            }
        } finally {
            publishing.unlock();
        }
    }

    /** Whether some request holds {@code page}. */
    public synchronized boolean isLive(int page) {
        return page >= 0 && page < pageCount && refs[page] > 0;
    }

    /** Whether {@code page} is in the prefix cache (held by requests or not). */
    public synchronized boolean isCached(int page) {
        return page >= 0 && page < pageCount && cachedByPage[page] != null;
    }

    /** References requests hold on {@code page}. */
    public synchronized int references(int page) {
        Checks.requireArgument(page >= 0 && page < pageCount, "page %s outside pool of %s", page, pageCount);
        return refs[page];
    }

    /** Pages some request holds (cached or not): what must reach zero once every request has ended. */
    public synchronized int pagesLive() {
        return liveCount;
    }

    /** Pages on the free stack (not counting evictable ones). */
    public synchronized int pagesFree() {
        return freeCount;
    }

    /** Pages in the prefix cache, held by requests or not. */
    public synchronized int pagesCached() {
        return cachedByKey.size();
    }

    /**
     * Pages an allocation can take now: the free ones and the cached ones no request holds, which {@link #allocate}
     * evicts when it finds no free page. One reading, under the pool's lock.
     */
    public synchronized int pagesAllocatable() {
        return freeCount + evictable.size();
    }

    /** Cached pages no request holds: kept for later hits, given up when an allocation needs them. */
    public synchronized int pagesEvictable() {
        return evictable.size();
    }

    /** Cached pages evicted since the pool was made. */
    public synchronized long evictions() {
        return evictions;
    }

    public long bytesLive() {
        return pagesLive() * pageBytes;
    }

    /** One complete page in the prefix cache. Fields other than {@link #evicted} never change. */
    static final class CachedPage {
        final long key;
        final int page;
        final int[] tokens;
        final CachedPage parent;
        /** Set under the pool's monitor when the page leaves the cache. */
        boolean evicted;

        CachedPage(long key, int page, int[] tokens, CachedPage parent) {
            this.key = key;
            this.page = page;
            this.tokens = tokens;
            this.parent = parent;
        }
    }

    private record Change(Kind kind, long key) {
        enum Kind { STORED, REMOVED, CLEARED }
    }
}
