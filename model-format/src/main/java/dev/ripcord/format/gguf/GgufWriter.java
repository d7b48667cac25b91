package dev.ripcord.format.gguf;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Writes a GGUF v3 file: metadata in insertion order, then tensor infos, then tensor data, each tensor padded to
 * the alignment. Build it up with the {@code put…} and {@link #addTensor} methods, then {@link #write(Path)} once.
 *
 * <p>Values are given with their GGUF type because a Java {@code long} alone does not say which of the eight integer
 * types to store. Accepted Java values: any {@link Number} for the integer and float types (range-checked for the
 * integer types), {@link Boolean} for BOOL, {@link String} for STRING, {@link GgufArray} for ARRAY.
 *
 * <p>Tensor data is given as a {@link MemorySegment} (heap or native) of exactly the tensor's byte size; the writer
 * keeps a reference (not a copy) until {@link #write}, so the caller must keep it alive and unchanged until then.
 */
public final class GgufWriter {
    private record Entry(GgufValueType type, Object value) {
    }

    private record PendingTensor(String name, long[] dims, GgmlType type, MemorySegment data) {
    }

    private final Map<String, Entry> metadata = new LinkedHashMap<>();
    private final List<PendingTensor> tensors = new ArrayList<>();
    private final java.util.Set<String> tensorNames = new java.util.HashSet<>();
    private int alignment = GgufFile.DEFAULT_ALIGNMENT;

    /** Puts a metadata value of an explicit type (replacing an earlier value of the same key, keeping its position). */
    public GgufWriter put(String key, GgufValueType type, Object value) {
        Objects.requireNonNull(key, "key");
        check(type, value, key);
        metadata.put(key, new Entry(type, value));
        if (key.equals(GgufFile.ALIGNMENT_KEY)) {
            long a = ((Number) value).longValue();
            if (!type.isInteger() || a <= 0 || Long.bitCount(a) != 1) {
                throw new IllegalArgumentException(key + " must be a positive power of two, got " + value);
            }
            alignment = (int) a;
        }
        return this;
    }

    public GgufWriter putString(String key, String value) {
        return put(key, GgufValueType.STRING, value);
    }

    public GgufWriter putU32(String key, long value) {
        return put(key, GgufValueType.UINT32, value);
    }

    public GgufWriter putI32(String key, int value) {
        return put(key, GgufValueType.INT32, value);
    }

    public GgufWriter putU64(String key, long value) {
        return put(key, GgufValueType.UINT64, value);
    }

    public GgufWriter putF32(String key, float value) {
        return put(key, GgufValueType.FLOAT32, value);
    }

    public GgufWriter putBool(String key, boolean value) {
        return put(key, GgufValueType.BOOL, value);
    }

    public GgufWriter putArray(String key, GgufValueType elementType, List<?> values) {
        return put(key, GgufValueType.ARRAY, new GgufArray(elementType, values));
    }

    /** Sets {@code general.alignment} (a u32 power of two); the default without it is 32. */
    public GgufWriter alignment(int alignment) {
        return put(GgufFile.ALIGNMENT_KEY, GgufValueType.UINT32, alignment);
    }

    /**
     * Adds a tensor; {@code dims} as ggml's {@code ne} (fastest first), {@code data} exactly
     * {@code type.byteSize(product of dims)} bytes in ggml's layout for that type.
     */
    public GgufWriter addTensor(String name, long[] dims, GgmlType type, MemorySegment data) {
        Objects.requireNonNull(name, "name");
        if (!tensorNames.add(name)) {
            throw new IllegalArgumentException("duplicate tensor " + name);
        }
        if (dims.length < 1 || dims.length > GgufFile.MAX_DIMS) {
            throw new IllegalArgumentException(name + ": rank " + dims.length);
        }
        long n = 1;
        for (long d : dims) {
            if (d < 0) {
                throw new IllegalArgumentException(name + ": negative dimension");
            }
            n = Math.multiplyExact(n, d);
        }
        if (dims[0] % type.blockSize() != 0) {
            throw new IllegalArgumentException(name + ": row of " + dims[0] + " is not a whole number of " + type + " blocks");
        }
        long size = type.byteSize(n);
        if (data.byteSize() != size) {
            throw new IllegalArgumentException(name + ": " + data.byteSize() + " bytes given, " + type + " " + java.util.Arrays.toString(dims) + " needs " + size);
        }
        tensors.add(new PendingTensor(name, dims.clone(), type, data));
        return this;
    }

    /** Convenience: an F32 tensor from floats. */
    public GgufWriter addTensor(String name, long[] dims, float[] data) {
        return addTensor(name, dims, GgmlType.F32, MemorySegment.ofArray(data));
    }

    /** Writes the file (replacing it if it exists). */
    public void write(Path path) throws IOException {
        try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(path), 1 << 20)) {
            write(os);
        }
    }

    /** Writes the whole file to a stream (which the caller closes). */
    public void write(OutputStream out) throws IOException {
        CountingOut o = new CountingOut(out);
        o.u32(GgufFile.MAGIC);
        o.u32(3);
        o.u64(tensors.size());
        o.u64(metadata.size());
        for (Map.Entry<String, Entry> e : metadata.entrySet()) {
            o.string(e.getKey());
            o.u32(e.getValue().type().id());
            o.value(e.getValue().type(), e.getValue().value());
        }
        long offset = 0;
        List<Long> offsets = new ArrayList<>();
        for (PendingTensor t : tensors) {
            o.string(t.name());
            o.u32(t.dims().length);
            for (long d : t.dims()) {
                o.u64(d);
            }
            o.u32(t.type().id());
            o.u64(offset);
            offsets.add(offset);
            offset = GgufFile.align(offset + t.data().byteSize(), alignment);
        }
        o.pad(alignment);
        long dataStart = o.count;
        byte[] chunk = new byte[1 << 16];
        for (int i = 0; i < tensors.size(); i++) {
            PendingTensor t = tensors.get(i);
            if (o.count - dataStart != offsets.get(i)) {
                throw new IllegalStateException("offset bookkeeping");
            }
            MemorySegment d = t.data();
            for (long p = 0; p < d.byteSize(); p += chunk.length) {
                int len = (int) Math.min(chunk.length, d.byteSize() - p);
                MemorySegment.copy(d, ValueLayout.JAVA_BYTE, p, chunk, 0, len);
                o.bytes(chunk, len);
            }
            o.pad(alignment);
        }
        out.flush();
    }

    private static void check(GgufValueType type, Object value, String key) {
        Objects.requireNonNull(value, key);
        boolean ok = switch (type) {
            case UINT8 -> inRange(value, 0, 0xFF);
            case INT8 -> inRange(value, Byte.MIN_VALUE, Byte.MAX_VALUE);
            case UINT16 -> inRange(value, 0, 0xFFFF);
            case INT16 -> inRange(value, Short.MIN_VALUE, Short.MAX_VALUE);
            case UINT32 -> inRange(value, 0, 0xFFFF_FFFFL);
            case INT32 -> inRange(value, Integer.MIN_VALUE, Integer.MAX_VALUE);
            case UINT64, INT64 -> value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte;
            case FLOAT32, FLOAT64 -> value instanceof Number;
            case BOOL -> value instanceof Boolean;
            case STRING -> value instanceof String;
            case ARRAY -> {
                if (!(value instanceof GgufArray a)) {
                    yield false;
                }
                for (Object v : a.values()) {
                    check(a.elementType(), v, key + "[]");
                }
                yield true;
            }
        };
        if (!ok) {
            throw new IllegalArgumentException("metadata '" + key + "': " + value + " (" + value.getClass().getSimpleName() + ") is not a valid " + type);
        }
    }

    private static boolean inRange(Object v, long min, long max) {
        if (!(v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte)) {
            return false;
        }
        long l = ((Number) v).longValue();
        return l >= min && l <= max;
    }

    private static final class CountingOut {
        private final OutputStream out;
        private final ByteBuffer buf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        long count;

        CountingOut(OutputStream out) {
            this.out = out;
        }

        void bytes(byte[] b, int len) throws IOException {
            out.write(b, 0, len);
            count += len;
        }

        private void flushBuf() throws IOException {
            bytes(buf.array(), buf.position());
            buf.clear();
        }

        void u8(int v) throws IOException {
            buf.put((byte) v);
            flushBuf();
        }

        void u16(int v) throws IOException {
            buf.putShort((short) v);
            flushBuf();
        }

        void u32(int v) throws IOException {
            buf.putInt(v);
            flushBuf();
        }

        void u64(long v) throws IOException {
            buf.putLong(v);
            flushBuf();
        }

        void string(String s) throws IOException {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            u64(b.length);
            bytes(b, b.length);
        }

        void pad(int alignment) throws IOException {
            long target = GgufFile.align(count, alignment);
            while (count < target) {
                u8(0);
            }
        }

        void value(GgufValueType type, Object v) throws IOException {
            switch (type) {
                case UINT8, INT8 -> u8(((Number) v).intValue());
                case UINT16, INT16 -> u16(((Number) v).intValue());
                case UINT32, INT32 -> u32((int) ((Number) v).longValue());
                case UINT64, INT64 -> u64(((Number) v).longValue());
                case FLOAT32 -> u32(Float.floatToRawIntBits(((Number) v).floatValue()));
                case FLOAT64 -> u64(Double.doubleToRawLongBits(((Number) v).doubleValue()));
                case BOOL -> u8((Boolean) v ? 1 : 0);
                case STRING -> string((String) v);
                case ARRAY -> {
                    GgufArray a = (GgufArray) v;
                    u32(a.elementType().id());
                    u64(a.values().size());
                    for (Object e : a.values()) {
                        value(a.elementType(), e);
                    }
                }
            }
        }
    }
}
