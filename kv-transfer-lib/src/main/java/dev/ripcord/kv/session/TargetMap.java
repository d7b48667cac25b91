package dev.ripcord.kv.session;

import dev.ripcord.kv.ByteRange;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Maps a session's logical offsets (the concatenation of its target ranges, in list order) onto region offsets.
 * Ranges that follow each other both logically and physically are merged, so a contiguous reservation costs one
 * copy per piece however many pages it has.
 */
public final class TargetMap {

    /** Receives one physically contiguous part of a logical span. */
    public interface Part {
        void accept(long regionOffset, long spanOffset, long length);
    }

    private final long[] logical;  // logical start of each merged range
    private final long[] physical; // its region offset
    private final long[] lengths;
    private final long totalBytes;

    public TargetMap(List<ByteRange> targets, long regionBytes) {
        Checks.requireArgument(!targets.isEmpty(), "no target ranges");
        List<ByteRange> sorted = new ArrayList<>(targets);
        sorted.sort(Comparator.comparingLong(ByteRange::offset));
        for (int i = 0; i < sorted.size(); i++) {
            ByteRange r = sorted.get(i);
            Checks.requireArgument(r.end() <= regionBytes, "target %s ends beyond the region (%s bytes)", r,
                    regionBytes);
            Checks.requireArgument(i == 0 || sorted.get(i - 1).end() <= r.offset(), "targets %s and %s overlap",
                    i == 0 ? null : sorted.get(i - 1), r);
        }
        long[] lg = new long[targets.size()];
        long[] ph = new long[targets.size()];
        long[] ln = new long[targets.size()];
        int n = 0;
        long at = 0;
        for (ByteRange r : targets) {
            if (n > 0 && ph[n - 1] + ln[n - 1] == r.offset()) {
                ln[n - 1] += r.length();
            } else {
                lg[n] = at;
                ph[n] = r.offset();
                ln[n] = r.length();
                n++;
            }
            at += r.length();
        }
        this.logical = java.util.Arrays.copyOf(lg, n);
        this.physical = java.util.Arrays.copyOf(ph, n);
        this.lengths = java.util.Arrays.copyOf(ln, n);
        this.totalBytes = at;
    }

    public long totalBytes() {
        return totalBytes;
    }

    boolean contains(long offset, long length) {
        return offset >= 0 && length >= 0 && offset <= totalBytes && length <= totalBytes - offset;
    }

    /** Calls {@code part} for each contiguous piece of logical span {@code [offset, offset + length)}. */
    public void forEach(long offset, long length, Part part) {
        Checks.requireArgument(contains(offset, length), "span [%s, +%s) outside the %s target bytes", offset,
                length, totalBytes);
        int i = index(offset);
        long done = 0;
        while (done < length) {
            long within = offset + done - logical[i];
            long n = Math.min(lengths[i] - within, length - done);
            part.accept(physical[i] + within, done, n);
            done += n;
            i++;
        }
    }

    /** Region offset of logical {@code offset}, and how many bytes from there are contiguous in the region. */
    long[] contiguousRun(long offset) {
        Checks.requireArgument(offset >= 0 && offset < totalBytes, "offset %s outside %s target bytes", offset,
                totalBytes);
        int i = index(offset);
        long within = offset - logical[i];
        return new long[] {physical[i] + within, lengths[i] - within};
    }

    private int index(long offset) {
        int lo = 0;
        int hi = logical.length - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (logical[mid] <= offset) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }
}
