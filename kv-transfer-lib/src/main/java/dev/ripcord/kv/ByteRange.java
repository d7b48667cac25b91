package dev.ripcord.kv;

/**
 * A byte range {@code [offset, offset + length)} of a region; for a KV page pool, page {@code p} of
 * {@code pageBytes} is {@code new ByteRange(p * pageBytes, pageBytes)}.
 */
public record ByteRange(long offset, long length) {
    public ByteRange {
        Checks.requireArgument(offset >= 0 && length > 0 && offset + length > offset,
                "byte range [%s, +%s) must have offset >= 0 and length > 0", offset, length);
    }

    public long end() {
        return offset + length;
    }
}
