package dev.ripcord.engine;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.BitSet;

/**
 * A fixed number of KV pages carved from <em>one contiguous</em> off-heap segment, so a transfer library can
 * register the whole pool as a single memory region and address page {@code p} at byte offset
 * {@code p · pageBytes()}.
 *
 * <p>Pages are allocated and freed explicitly; the pool counts them ({@link #pagesLive()}, {@link #bytesLive()})
 * and rejects freeing a page that is not live. Allocation is LIFO over a free stack that starts in index order,
 * so a fresh pool hands out pages 0, 1, 2, ... . The memory belongs to the engine's arena, or to whoever supplied
 * it ({@link KvPoolMemory}, e.g. a transfer agent's shared-memory region): either way the segment stays valid
 * until the engine is closed, and pages are not zeroed on reuse.
 *
 * <p>Thread-safe: allocation and free take a short monitor that is never held while anything computes.
 */
public final class KvPagePool {
    private final KvLayout layout;
    private final int pageCount;
    private final long pageBytes;
    private final MemorySegment segment;
    private final int[] freeStack;
    private final BitSet live;
    private int freeCount;

    KvPagePool(KvLayout layout, int pageCount, Arena arena) {
        this(layout, pageCount, arena.allocate(bytesFor(layout, pageCount), 4096));
    }

    /**
     * A pool in {@code memory}, which someone else owns (see {@link KvPoolMemory}): its first
     * {@code pageCount · pageBytes} bytes become the pages.
     */
    KvPagePool(KvLayout layout, int pageCount, MemorySegment memory) {
        long bytes = bytesFor(layout, pageCount);
        Checks.requireArgument(memory.isNative(), "KV pool memory must be native");
        Checks.requireArgument(memory.byteSize() >= bytes, "KV pool memory of %s bytes is smaller than %s pages of %s",
                memory.byteSize(), pageCount, layout.pageBytes());
        Checks.requireArgument(memory.address() % KvPoolMemory.ALIGNMENT == 0,
                "KV pool memory at 0x%s is not %s-byte aligned", Long.toHexString(memory.address()),
                KvPoolMemory.ALIGNMENT);
        this.layout = layout;
        this.pageCount = pageCount;
        this.pageBytes = layout.pageBytes();
        this.segment = memory.asSlice(0, bytes);
        this.freeStack = new int[pageCount];
        for (int i = 0; i < pageCount; i++) {
            freeStack[i] = pageCount - 1 - i;
        }
        this.freeCount = pageCount;
        this.live = new BitSet(pageCount);
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

    /**
     * Allocates {@code n} pages, all or nothing, into {@code out[0..n)}.
     *
     * @throws KvPoolExhaustedException if fewer than {@code n} pages are free (nothing is allocated)
     */
    public synchronized void allocate(int n, int[] out) {
        Checks.requireArgument(n >= 0 && n <= out.length, "cannot allocate %s pages into %s slots", n, out.length);
        if (n > freeCount) {
            throw new KvPoolExhaustedException(n, freeCount, pageCount);
        }
        for (int i = 0; i < n; i++) {
            int page = freeStack[--freeCount];
            live.set(page);
            out[i] = page;
        }
    }

    /** Allocates one page. @throws KvPoolExhaustedException if none is free */
    public int allocate() {
        int[] one = new int[1];
        allocate(1, one);
        return one[0];
    }

    /** Returns a live page to the pool. @throws IllegalStateException if the page is not live (double free) */
    public synchronized void free(int page) {
        Checks.requireArgument(page >= 0 && page < pageCount, "page %s outside pool of %s", page, pageCount);
        Checks.requireState(live.get(page), "page %s is not live (double free?)", page);
        live.clear(page);
        freeStack[freeCount++] = page;
    }

    public synchronized boolean isLive(int page) {
        return page >= 0 && page < pageCount && live.get(page);
    }

    public synchronized int pagesLive() {
        return pageCount - freeCount;
    }

    public synchronized int pagesFree() {
        return freeCount;
    }

    public long bytesLive() {
        return pagesLive() * pageBytes;
    }
}
