package dev.ripcord.format.gguf;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A GGUF file (version 3, and version 2 which has the same little-endian layout), opened read-only: its header,
 * metadata key/values and tensor infos parsed eagerly onto the heap, its tensor data memory-mapped.
 *
 * <p>Layout read (ggml's {@code gguf.cpp}): magic {@code "GGUF"}, u32 version, u64 tensor count, u64 metadata count,
 * the metadata entries (string key, u32 value type, value), the tensor infos (string name, u32 rank, u64 dims
 * fastest first, u32 ggml type, u64 offset), padding up to the alignment ({@code general.alignment}, default
 * {@value #DEFAULT_ALIGNMENT}), then the tensor data. Strings are a u64 byte length and UTF-8 bytes.
 *
 * <p>Metadata values map to Java as {@link GgufValueType} states: every integer type to {@link Long}, f32 to
 * {@link Float}, f64 to {@link Double}, bool to {@link Boolean}, string to {@link String}, array to an unmodifiable
 * {@code List<Object>} of those. {@link #metadata()} keeps the file's order.
 *
 * <p>Ownership: the whole file is mapped once into a shared {@link Arena} that this object owns; {@link #close()}
 * releases it exactly once (later calls do nothing), after which the segments from {@link #tensorData} throw
 * {@link IllegalStateException} on access. Metadata and tensor infos are heap objects and stay valid after close.
 * The mapping is read-only: writing through a tensor segment throws.
 *
 * <p>Every malformed or truncated input is a {@link GgufFormatException} naming the byte offset and what was expected
 * there, never an index-out-of-bounds.
 */
public final class GgufFile implements AutoCloseable {
    /** {@code "GGUF"} as a little-endian u32. */
    public static final int MAGIC = 0x46554747;
    /** Alignment of the tensor data when {@code general.alignment} is absent. */
    public static final int DEFAULT_ALIGNMENT = 32;
    /** The metadata key that sets the alignment. */
    public static final String ALIGNMENT_KEY = "general.alignment";
    /** ggml's GGML_MAX_DIMS. */
    static final int MAX_DIMS = 4;

    private final Path path;
    private final int version;
    private final Map<String, Object> metadata;
    private final List<GgufTensorInfo> tensors;
    private final Map<String, GgufTensorInfo> tensorsByName;
    private final int alignment;
    private final long dataOffset;
    private final Arena arena;
    private final MemorySegment file;
    private final AtomicBoolean closed = new AtomicBoolean();

    private GgufFile(Path path, int version, Map<String, Object> metadata, List<GgufTensorInfo> tensors, int alignment,
                     long dataOffset, Arena arena, MemorySegment file) {
        this.path = path;
        this.version = version;
        this.metadata = Collections.unmodifiableMap(metadata);
        this.tensors = List.copyOf(tensors);
        Map<String, GgufTensorInfo> byName = new LinkedHashMap<>();
        for (GgufTensorInfo t : tensors) {
            byName.put(t.name(), t);
        }
        this.tensorsByName = Collections.unmodifiableMap(byName);
        this.alignment = alignment;
        this.dataOffset = dataOffset;
        this.arena = arena;
        this.file = file;
    }

    /** True when the file starts with the GGUF magic (reads four bytes; false for a shorter file). */
    public static boolean isGguf(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            var buf = java.nio.ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN);
            while (buf.hasRemaining()) {
                if (ch.read(buf) < 0) {
                    return false;
                }
            }
            return buf.getInt(0) == MAGIC;
        }
    }

    /**
     * Maps and parses the file. The caller owns the result and must {@link #close()} it.
     *
     * @throws GgufFormatException the file is not GGUF v2/v3, or is malformed or truncated
     * @throws IOException         it cannot be read
     */
    public static GgufFile open(Path path) throws IOException {
        Arena arena = Arena.ofShared();
        try {
            MemorySegment file;
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
                file = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size(), arena);
            }
            GgufFile f = parse(path, file, arena);
            return f;
        } catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Parses a mapped file. Every count and size is checked against the bytes left before anything is allocated for
     * it; a runtime exception from a check this reader lacks is still reported as a {@link GgufFormatException}, so a
     * caller handles one exception type for every malformed input.
     */
    private static GgufFile parse(Path path, MemorySegment file, Arena arena) throws GgufFormatException {
        Reader r = new Reader(path, file);
        try {
            return parse(path, file, arena, r);
        } catch (RuntimeException e) {
            throw new GgufFormatException(path, r.pos, "malformed: " + e, e);
        }
    }

    private static GgufFile parse(Path path, MemorySegment file, Arena arena, Reader r) throws GgufFormatException {
        int magic = r.u32("the magic \"GGUF\"");
        if (magic != MAGIC) {
            throw new GgufFormatException(path, 0, String.format("not a GGUF file: magic is 0x%08x, expected \"GGUF\" (0x%08x)", magic, MAGIC));
        }
        long versionAt = r.pos;
        int version = r.u32("the version");
        if (version != 2 && version != 3) {
            if (Integer.reverseBytes(version) == 2 || Integer.reverseBytes(version) == 3) {
                throw new GgufFormatException(path, versionAt, "big-endian GGUF (version " + Integer.reverseBytes(version) + ") is not supported");
            }
            throw new GgufFormatException(path, versionAt, "GGUF version " + Integer.toUnsignedString(version) + " is not supported (expected 2 or 3)");
        }
        long tensorCountAt = r.pos;
        long tensorCount = r.u64("the tensor count");
        long kvCountAt = r.pos;
        long kvCount = r.u64("the metadata count");
        // Each metadata entry takes at least 8+1+4+1 bytes and each tensor info at least 8+4+4+8: a count that cannot
        // fit in the file is corruption, reported before anything is allocated for it.
        if (kvCount < 0 || kvCount > r.remaining() / 13) {
            throw new GgufFormatException(path, kvCountAt, "metadata count " + Long.toUnsignedString(kvCount) + " cannot fit in the " + r.remaining() + " bytes left");
        }
        if (tensorCount < 0 || tensorCount > r.remaining() / 24) {
            throw new GgufFormatException(path, tensorCountAt, "tensor count " + Long.toUnsignedString(tensorCount) + " cannot fit in the " + r.remaining() + " bytes left");
        }
        Map<String, Object> metadata = new LinkedHashMap<>();
        for (long i = 0; i < kvCount; i++) {
            long at = r.pos;
            String key = r.string("metadata key #" + i);
            long typePos = r.pos;
            long typeId = Integer.toUnsignedLong(r.u32("the value type of '" + key + "'"));
            GgufValueType type = GgufValueType.byId(typeId).orElseThrow(() ->
                    new GgufFormatException(path, typePos, "unknown metadata value type " + typeId + " for key '" + key + "' (expected 0..12)"));
            Object value = r.value(type, key, 0);
            if (metadata.putIfAbsent(key, value) != null) {
                throw new GgufFormatException(path, at, "duplicate metadata key '" + key + "'");
            }
        }
        int alignment = DEFAULT_ALIGNMENT;
        Object a = metadata.get(ALIGNMENT_KEY);
        if (a != null) {
            if (!(a instanceof Long l) || l <= 0 || l > (1 << 30) || Long.bitCount(l) != 1) {
                throw new GgufFormatException(path, r.pos, ALIGNMENT_KEY + " is " + a + ", expected a positive power of two");
            }
            alignment = (int) (long) l;
        }
        List<GgufTensorInfo> infos = new ArrayList<>();
        List<Long> infoOffsets = new ArrayList<>();
        java.util.Set<String> names = new java.util.HashSet<>();
        for (long i = 0; i < tensorCount; i++) {
            long at = r.pos;
            String name = r.string("the name of tensor #" + i);
            if (!names.add(name)) {
                throw new GgufFormatException(path, at, "duplicate tensor name '" + name + "'");
            }
            long rankAt = r.pos;
            int rank = r.u32("the rank of tensor '" + name + "'");
            if (rank < 1 || rank > MAX_DIMS) {
                throw new GgufFormatException(path, rankAt, "tensor '" + name + "' has rank " + Integer.toUnsignedString(rank) + ", expected 1.." + MAX_DIMS);
            }
            long[] dims = new long[rank];
            long elements = 1;
            for (int d = 0; d < rank; d++) {
                long dimAt = r.pos;
                dims[d] = r.u64("dimension " + d + " of tensor '" + name + "'");
                if (dims[d] < 0) {
                    throw new GgufFormatException(path, dimAt, "tensor '" + name + "' dimension " + d + " is " + Long.toUnsignedString(dims[d]));
                }
                try {
                    elements = Math.multiplyExact(elements, dims[d]);
                } catch (ArithmeticException overflow) {
                    throw new GgufFormatException(path, dimAt, "tensor '" + name + "' has more than 2^63 elements");
                }
            }
            long typeAt = r.pos;
            long typeId = Integer.toUnsignedLong(r.u32("the type of tensor '" + name + "'"));
            GgmlType type = GgmlType.byId(typeId).orElseThrow(() ->
                    new GgufFormatException(path, typeAt, "tensor '" + name + "' has unknown ggml type id " + typeId));
            if (dims[0] % type.blockSize() != 0) {
                throw new GgufFormatException(path, typeAt, "tensor '" + name + "' row of " + dims[0] + " elements is not a whole number of " + type + " blocks of " + type.blockSize());
            }
            if (elements / type.blockSize() > Long.MAX_VALUE / type.typeSize()) {
                throw new GgufFormatException(path, typeAt, "tensor '" + name + "' of " + elements + " " + type + " elements has more than 2^63 bytes");
            }
            long offAt = r.pos;
            long offset = r.u64("the data offset of tensor '" + name + "'");
            if (offset < 0 || offset % alignment != 0) {
                throw new GgufFormatException(path, offAt, "tensor '" + name + "' data offset " + Long.toUnsignedString(offset) + " is not a multiple of the alignment " + alignment);
            }
            infos.add(new GgufTensorInfo(name, dims, type, offset));
            infoOffsets.add(at);
        }
        long dataOffset = align(r.pos, alignment);
        long dataSize = file.byteSize() - dataOffset;
        for (int i = 0; i < infos.size(); i++) {
            GgufTensorInfo t = infos.get(i);
            long end = t.offset() + t.byteSize(); // both in [0, 2^63): the sum cannot wrap past zero
            if (end < 0 || end > dataSize) {
                throw new GgufFormatException(path, dataOffset + t.offset(), "tensor '" + t.name() + "' (" + t.byteSize()
                        + " bytes of " + t.type() + " at data offset " + t.offset() + ") runs past the end of the file ("
                        + Math.max(0, dataSize) + " bytes of tensor data)");
            }
        }
        return new GgufFile(path, version, metadata, infos, alignment, dataOffset, arena, file);
    }

    static long align(long offset, int alignment) {
        return (offset + alignment - 1) / alignment * alignment;
    }

    /** The file. */
    public Path path() {
        return path;
    }

    /** The GGUF version (2 or 3). */
    public int version() {
        return version;
    }

    /** Every metadata key/value in file order (unmodifiable; see the class javadoc for the value types). */
    public Map<String, Object> metadata() {
        return metadata;
    }

    /** The tensor infos in file order. */
    public List<GgufTensorInfo> tensors() {
        return tensors;
    }

    /** The tensor with this name, if the file has one. */
    public Optional<GgufTensorInfo> tensor(String name) {
        return Optional.ofNullable(tensorsByName.get(name));
    }

    /** Alignment of the tensor data section and of every tensor's offset within it. */
    public int alignment() {
        return alignment;
    }

    /** Absolute file offset where the tensor data section starts. */
    public long dataOffset() {
        return dataOffset;
    }

    /** The whole mapped file, read-only (valid until {@link #close()}). */
    public MemorySegment fileSegment() {
        return file;
    }

    /**
     * A read-only view of one tensor's bytes in the mapping (no copy), valid until {@link #close()}.
     *
     * @throws NoSuchElementException the file has no such tensor
     */
    public MemorySegment tensorData(String name) {
        GgufTensorInfo t = tensor(name).orElseThrow(() -> new NoSuchElementException(path + ": no tensor '" + name + "'"));
        return tensorData(t);
    }

    /** A read-only view of this tensor's bytes in the mapping (no copy), valid until {@link #close()}. */
    public MemorySegment tensorData(GgufTensorInfo t) {
        return file.asSlice(dataOffset + t.offset(), t.byteSize());
    }

    // ------------------------------------------------------------------------------------------------ typed getters

    /** True when the key is present. */
    public boolean has(String key) {
        return metadata.containsKey(key);
    }

    /** The string value of a key; throws {@link NoSuchElementException} if absent, {@link IllegalArgumentException} if not a string. */
    public String getString(String key) {
        return findString(key).orElseThrow(() -> missing(key));
    }

    /** The string value of a key, or empty if absent; throws {@link IllegalArgumentException} if present but not a string. */
    public Optional<String> findString(String key) {
        return find(key, String.class, "string");
    }

    /** The integer value of a key (any of the eight integer types); throws if absent or not an integer. */
    public long getLong(String key) {
        return findLong(key).orElseThrow(() -> missing(key));
    }

    /** The integer value of a key, or empty if absent; throws {@link IllegalArgumentException} if not an integer. */
    public Optional<Long> findLong(String key) {
        return find(key, Long.class, "integer");
    }

    /** The integer value of a key as an {@code int}; throws if absent, not an integer, or out of int range. */
    public int getInt(String key) {
        long v = getLong(key);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(path + ": metadata '" + key + "' = " + v + " does not fit an int");
        }
        return (int) v;
    }

    /** The floating value of a key (f32, or f64 narrowed); throws if absent or not a float. */
    public float getFloat(String key) {
        return findFloat(key).orElseThrow(() -> missing(key));
    }

    /** The floating value of a key (f32, or f64 narrowed), or empty if absent; throws if present but not a float. */
    public Optional<Float> findFloat(String key) {
        Object v = metadata.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (v instanceof Float f) {
            return Optional.of(f);
        }
        if (v instanceof Double d) {
            return Optional.of(d.floatValue());
        }
        throw wrongType(key, v, "float");
    }

    /** The boolean value of a key; throws if absent or not a bool. */
    public boolean getBoolean(String key) {
        return findBoolean(key).orElseThrow(() -> missing(key));
    }

    /** The boolean value of a key, or empty if absent; throws if present but not a bool. */
    public Optional<Boolean> findBoolean(String key) {
        return find(key, Boolean.class, "bool");
    }

    /** The array value of a key; throws if absent or not an array. */
    public List<Object> getList(String key) {
        return findList(key).orElseThrow(() -> missing(key));
    }

    /** The array value of a key, or empty if absent; throws if present but not an array. */
    @SuppressWarnings("unchecked")
    public Optional<List<Object>> findList(String key) {
        return find(key, List.class, "array").map(l -> (List<Object>) l);
    }

    private <T> Optional<T> find(String key, Class<T> type, String what) {
        Object v = metadata.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (!type.isInstance(v)) {
            throw wrongType(key, v, what);
        }
        return Optional.of(type.cast(v));
    }

    private NoSuchElementException missing(String key) {
        return new NoSuchElementException(path + ": no metadata key '" + key + "'");
    }

    private IllegalArgumentException wrongType(String key, Object v, String expected) {
        String actual = v instanceof List<?> ? "array" : v instanceof Long ? "integer" : v.getClass().getSimpleName().toLowerCase(java.util.Locale.ROOT);
        return new IllegalArgumentException(path + ": metadata '" + key + "' is " + actual + ", expected " + expected);
    }

    /** Releases the mapping, exactly once; later calls do nothing. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "GgufFile[" + path + ", v" + version + ", " + metadata.size() + " keys, " + tensors.size() + " tensors]";
    }

    /** Bounds-checked little-endian cursor over the mapping. */
    private static final class Reader {
        private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
        private static final int MAX_NESTING = 8;
        /** Elements of the longest array the JVM allocates (a little under {@code Integer.MAX_VALUE}). */
        private static final int MAX_ARRAY = Integer.MAX_VALUE - 8;

        private final Path path;
        private final MemorySegment seg;
        long pos;

        Reader(Path path, MemorySegment seg) {
            this.path = path;
            this.seg = seg;
        }

        long remaining() {
            return seg.byteSize() - pos;
        }

        private void need(long n, String what) throws GgufFormatException {
            if (n < 0 || n > remaining()) {
                throw new GgufFormatException(path, pos, "truncated: expected " + what + " (" + (n < 0 ? Long.toUnsignedString(n) : n)
                        + " bytes) but the file has " + remaining() + " bytes left");
            }
        }

        int u32(String what) throws GgufFormatException {
            need(4, what);
            int v = seg.get(I32, pos);
            pos += 4;
            return v;
        }

        long u64(String what) throws GgufFormatException {
            need(8, what);
            long v = seg.get(I64, pos);
            pos += 8;
            return v;
        }

        String string(String what) throws GgufFormatException {
            long lenAt = pos;
            long len = u64("the byte length of " + what);
            if (len < 0 || len > remaining() || len > Integer.MAX_VALUE - 8) {
                throw new GgufFormatException(path, lenAt, "truncated or corrupt: " + what + " claims " + Long.toUnsignedString(len)
                        + " bytes but the file has " + remaining() + " bytes left");
            }
            if (len == 0) {
                return ""; // one shared instance: an array of empty strings costs a reference each, not a String
            }
            byte[] bytes = seg.asSlice(pos, len).toArray(ValueLayout.JAVA_BYTE);
            try {
                String s = StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(java.nio.ByteBuffer.wrap(bytes)).toString();
                pos += len;
                return s;
            } catch (CharacterCodingException e) {
                throw new GgufFormatException(path, pos, what + " is not valid UTF-8");
            }
        }

        Object value(GgufValueType type, String key, int depth) throws GgufFormatException {
            String what = "the " + type + " value of '" + key + "'";
            if (type.fixedSize() > 0) {
                need(type.fixedSize(), what);
            }
            Object v = switch (type) {
                case UINT8 -> (long) Byte.toUnsignedInt(seg.get(ValueLayout.JAVA_BYTE, pos));
                case INT8 -> (long) seg.get(ValueLayout.JAVA_BYTE, pos);
                case UINT16 -> (long) Short.toUnsignedInt(seg.get(I16, pos));
                case INT16 -> (long) seg.get(I16, pos);
                case UINT32 -> Integer.toUnsignedLong(seg.get(I32, pos));
                case INT32 -> (long) seg.get(I32, pos);
                case UINT64, INT64 -> seg.get(I64, pos);
                case FLOAT32 -> Float.intBitsToFloat(seg.get(I32, pos));
                case FLOAT64 -> Double.longBitsToDouble(seg.get(I64, pos));
                case BOOL -> {
                    byte b = seg.get(ValueLayout.JAVA_BYTE, pos);
                    if (b != 0 && b != 1) {
                        throw new GgufFormatException(path, pos, what + " is byte " + b + ", expected 0 or 1");
                    }
                    yield b == 1;
                }
                case STRING -> string(what);
                case ARRAY -> array(key, depth);
            };
            if (type.fixedSize() > 0) {
                pos += type.fixedSize();
            }
            return v;
        }

        /**
         * An array value. Its count is checked against the bytes left (each element takes at least its smallest
         * encoding) and against the largest Java array, before anything is allocated. Fixed-size elements are copied
         * into one primitive array and shown as a list that boxes on access (an array of u8 costs about its own size on
         * the heap, not a boxed object and a reference per byte); strings and nested arrays, which take at least 8 and
         * 12 bytes in the file, are collected one by one as they are read.
         */
        private List<Object> array(String key, int depth) throws GgufFormatException {
            if (depth >= MAX_NESTING) {
                throw new GgufFormatException(path, pos, "array of '" + key + "' nested deeper than " + MAX_NESTING);
            }
            long typeAt = pos;
            long typeId = Integer.toUnsignedLong(u32("the element type of array '" + key + "'"));
            GgufValueType elem = GgufValueType.byId(typeId).orElseThrow(() ->
                    new GgufFormatException(path, typeAt, "unknown array element type " + typeId + " for key '" + key + "' (expected 0..12)"));
            long countAt = pos;
            long count = u64("the length of array '" + key + "'");
            long minSize = elem.fixedSize() > 0 ? elem.fixedSize() : (elem == GgufValueType.STRING ? 8 : 12);
            if (count < 0 || count > remaining() / minSize) {
                throw new GgufFormatException(path, countAt, "truncated or corrupt: array '" + key + "' claims "
                        + Long.toUnsignedString(count) + " " + elem + " elements but the file has " + remaining() + " bytes left");
            }
            if (count > MAX_ARRAY) {
                throw new GgufFormatException(path, countAt, "array '" + key + "' of " + count + " " + elem
                        + " elements is longer than a Java array (" + MAX_ARRAY + ")");
            }
            if (count == 0) {
                return List.of();
            }
            if (elem.fixedSize() > 0) {
                return primitiveArray(elem, (int) count, key);
            }
            List<Object> out = new ArrayList<>();
            for (long i = 0; i < count; i++) {
                out.add(value(elem, key, depth + 1));
            }
            return Collections.unmodifiableList(out);
        }

        private List<Object> primitiveArray(GgufValueType elem, int n, String key) throws GgufFormatException {
            long at = pos;
            List<Object> list = switch (elem) {
                case UINT8, INT8, BOOL -> {
                    byte[] a = seg.asSlice(pos, n).toArray(ValueLayout.JAVA_BYTE);
                    if (elem == GgufValueType.BOOL) {
                        for (int i = 0; i < n; i++) {
                            if (a[i] != 0 && a[i] != 1) {
                                throw new GgufFormatException(path, at + i, "element " + i + " of bool array '" + key + "' is byte " + a[i] + ", expected 0 or 1");
                            }
                        }
                    }
                    yield new PrimitiveList(n, switch (elem) {
                        case UINT8 -> i -> (long) Byte.toUnsignedInt(a[i]);
                        case INT8 -> i -> (long) a[i];
                        default -> i -> a[i] == 1;
                    });
                }
                case UINT16, INT16 -> {
                    short[] a = new short[n];
                    MemorySegment.copy(seg, I16, pos, a, 0, n);
                    yield new PrimitiveList(n, elem == GgufValueType.UINT16 ? i -> (long) Short.toUnsignedInt(a[i]) : i -> (long) a[i]);
                }
                case UINT32, INT32, FLOAT32 -> {
                    int[] a = new int[n];
                    MemorySegment.copy(seg, I32, pos, a, 0, n);
                    yield new PrimitiveList(n, switch (elem) {
                        case UINT32 -> i -> Integer.toUnsignedLong(a[i]);
                        case INT32 -> i -> (long) a[i];
                        default -> i -> Float.intBitsToFloat(a[i]);
                    });
                }
                case UINT64, INT64, FLOAT64 -> {
                    long[] a = new long[n];
                    MemorySegment.copy(seg, I64, pos, a, 0, n);
                    yield new PrimitiveList(n, elem == GgufValueType.FLOAT64 ? i -> Double.longBitsToDouble(a[i]) : i -> a[i]);
                }
                case STRING, ARRAY -> throw new IllegalArgumentException(elem + " has no fixed size");
            };
            pos += (long) n * elem.fixedSize();
            return list;
        }
    }

    /** An unmodifiable list over a primitive array, boxing each element as it is read. */
    private static final class PrimitiveList extends java.util.AbstractList<Object> implements java.util.RandomAccess {
        private final int size;
        private final java.util.function.IntFunction<Object> element;

        PrimitiveList(int size, java.util.function.IntFunction<Object> element) {
            this.size = size;
            this.element = element;
        }

        @Override
        public Object get(int index) {
            java.util.Objects.checkIndex(index, size);
            return element.apply(index);
        }

        @Override
        public int size() {
            return size;
        }
    }
}
