package dev.ripcord.protocol.prefix;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * One change to a prefill worker's prefix cache, as it travels on the prefix-cache topic (keyed by
 * {@link #workerId}, so one worker's events stay on one partition, in order). Gateways read the topic to know which
 * worker holds which page keys ({@link PrefixKeys}).
 *
 * <p>{@code generation} names one life of the worker's cache: a fresh one at every start and every
 * {@link Kind#CLEARED}, so a reader drops what it knew of the worker whenever the generation changes. {@code seq}
 * numbers the worker's events from 1 at process start, one by one and across generations: a reader that sees a
 * number skipped has lost an event and must not trust the worker's entries until its next {@code CLEARED}; a
 * number it has seen before is a redelivery and changes nothing.
 *
 * @param workerId   the worker as the gateways address it: {@code host:port} of its prefill endpoint
 * @param generation the cache life this event belongs to
 * @param seq        the worker's sequence number, from 1, without gaps as published
 * @param kind       what happened
 * @param pageTokens tokens per page of the worker's cache (the page size its keys were chained with)
 * @param keys       the pages' keys ({@code STORED} and {@code REMOVED}); empty for {@code CLEARED}
 */
public record PrefixCacheEvent(String workerId, long generation, long seq, Kind kind, int pageTokens, long[] keys) {

    /** What happened to the worker's cache. */
    public enum Kind {
        /** Complete pages entered the cache under {@code keys}, head first. */
        STORED,
        /** Pages under {@code keys} left the cache. */
        REMOVED,
        /** The cache is empty and a new generation begins; everything known of the worker before is void. */
        CLEARED
    }

    /** The codec's version byte; a record of another version is rejected. */
    static final byte VERSION = 1;

    public PrefixCacheEvent {
        Objects.requireNonNull(workerId, "workerId");
        Objects.requireNonNull(kind, "kind");
        keys = keys == null ? new long[0] : keys;
        if (seq < 1) {
            throw new IllegalArgumentException("seq starts at 1, got " + seq);
        }
        if (pageTokens <= 0) {
            throw new IllegalArgumentException("pageTokens must be positive, got " + pageTokens);
        }
    }

    /** The Kafka record key: the worker, so its events keep their order. */
    public String key() {
        return workerId;
    }

    /**
     * The record's value: version, kind, generation, seq, pageTokens, the worker ID (length-prefixed UTF-8) and the
     * keys (count, then 8 bytes each), big-endian. Binary because a page key is 8 bytes and a long prompt has
     * hundreds of them.
     */
    public byte[] encode() {
        byte[] id = workerId.getBytes(StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(1 + 1 + 8 + 8 + 4 + 4 + id.length + 4 + 8 * keys.length);
        out.put(VERSION).put((byte) kind.ordinal()).putLong(generation).putLong(seq).putInt(pageTokens)
                .putInt(id.length).put(id).putInt(keys.length);
        for (long key : keys) {
            out.putLong(key);
        }
        return out.array();
    }

    /**
     * Reads {@link #encode()}'s bytes.
     *
     * @throws IllegalArgumentException if they are not an event of this version
     */
    public static PrefixCacheEvent decode(byte[] bytes) {
        try {
            ByteBuffer in = ByteBuffer.wrap(bytes);
            byte version = in.get();
            if (version != VERSION) {
                throw new IllegalArgumentException("prefix-cache event version " + version + ", expected " + VERSION);
            }
            int kind = in.get();
            if (kind < 0 || kind >= Kind.values().length) {
                throw new IllegalArgumentException("unknown prefix-cache event kind " + kind);
            }
            long generation = in.getLong();
            long seq = in.getLong();
            int pageTokens = in.getInt();
            int idLength = in.getInt();
            if (idLength < 0 || idLength > in.remaining()) {
                throw new IllegalArgumentException("bad worker ID length " + idLength);
            }
            byte[] id = new byte[idLength];
            in.get(id);
            int count = in.getInt();
            if (count < 0 || count != in.remaining() / 8 || in.remaining() % 8 != 0) {
                throw new IllegalArgumentException("bad key count " + count + " for " + in.remaining() + " bytes");
            }
            long[] keys = new long[count];
            for (int i = 0; i < count; i++) {
                keys[i] = in.getLong();
            }
            return new PrefixCacheEvent(new String(id, StandardCharsets.UTF_8), generation, seq, Kind.values()[kind],
                    pageTokens, keys);
        } catch (BufferUnderflowException e) {
            throw new IllegalArgumentException("truncated prefix-cache event (" + bytes.length + " bytes)", e);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PrefixCacheEvent e && workerId.equals(e.workerId) && generation == e.generation
                && seq == e.seq && kind == e.kind && pageTokens == e.pageTokens && Arrays.equals(keys, e.keys);
    }

    @Override
    public int hashCode() {
        return Objects.hash(workerId, generation, seq, kind, pageTokens, Arrays.hashCode(keys));
    }

    @Override
    public String toString() {
        return "PrefixCacheEvent[" + workerId + " gen=" + Long.toHexString(generation) + " seq=" + seq + " " + kind
                + " pageTokens=" + pageTokens + " keys=" + keys.length + "]";
    }
}
