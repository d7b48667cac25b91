package dev.ripcord.format.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A model file is input from whoever published it: a hostile one must fail with a {@link GgufFormatException} at load,
 * never with another exception, and never cost more heap than a small multiple of its own size.
 */
class GgufHostileInputTest {
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @TempDir
    Path dir;

    /** A small valid file with every kind of count the reader trusts: arrays of each width, strings, nesting, tensors. */
    private static byte[] smallValidFile() throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        new GgufWriter()
                .putString("general.architecture", "llama")
                .putU32("llama.block_count", 2)
                .putBool("flag", true)
                .putArray("bytes", GgufValueType.UINT8, List.of(1, 2, 200))
                .putArray("bools", GgufValueType.BOOL, List.of(true, false))
                .putArray("shorts", GgufValueType.INT16, List.of(-1, 7))
                .putArray("tokens", GgufValueType.STRING, List.of("<s>", "</s>", "a"))
                .putArray("scores", GgufValueType.FLOAT32, List.of(0f, -1.5f))
                .putArray("longs", GgufValueType.UINT64, List.of(1L, 1L << 40))
                .put("nested", GgufValueType.ARRAY, new GgufArray(GgufValueType.ARRAY, List.of(
                        new GgufArray(GgufValueType.UINT16, List.of(1, 2)),
                        new GgufArray(GgufValueType.STRING, List.of("x")))))
                .addTensor("a", new long[] {4, 2}, new float[8])
                .addTensor("q", new long[] {32}, GgmlType.Q8_0,
                        java.lang.foreign.MemorySegment.ofArray(new byte[GgmlType.Q8_0.typeSize()]))
                .write(bos);
        return bos.toByteArray();
    }

    /** Values that make counts and sizes lie: around the file size, int and long limits, signs. */
    private static long interesting(Random rnd, long fileSize) {
        long[] v = {0, 1, 2, 3, 4, 7, 8, 13, 255, 0xFFFF, fileSize - 1, fileSize, fileSize + 1, fileSize * 20,
                Integer.MAX_VALUE, Integer.MAX_VALUE + 1L, 0xFFFF_FFFFL, 1L << 32, (1L << 32) + 1, 1L << 62,
                Long.MAX_VALUE, Long.MAX_VALUE / 4 + 1, Long.MIN_VALUE, -1, -2};
        return v[rnd.nextInt(v.length)];
    }

    @Test
    void mutatedHeadersFailOnlyWithFormatErrorsAndBoundedAllocation() throws IOException {
        byte[] valid = smallValidFile();
        int headerEnd;
        try (GgufFile f = GgufFile.open(write("valid.gguf", valid))) {
            headerEnd = (int) f.dataOffset();
        }
        Random rnd = new Random(48);
        Path p = dir.resolve("fuzz.gguf");
        int opened = 0;
        int refused = 0;
        int sizeChecksFired = 0;
        long mostAllocated = 0;
        List<String> wrong = new ArrayList<>();
        for (int iteration = 0; iteration < 3000; iteration++) {
            byte[] b = valid.clone();
            ByteBuffer le = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
            int mutations = 1 + rnd.nextInt(3);
            for (int m = 0; m < mutations; m++) {
                int at = 8 + rnd.nextInt(headerEnd - 8); // past magic and version: they are checked first
                switch (rnd.nextInt(4)) {
                    case 0 -> { if (at + 8 <= b.length) le.putLong(at, interesting(rnd, b.length)); }
                    case 1 -> { if (at + 4 <= b.length) le.putInt(at, (int) interesting(rnd, b.length)); }
                    case 2 -> b[at] = (byte) rnd.nextInt(256);
                    default -> b[at] ^= (byte) (1 << rnd.nextInt(8));
                }
            }
            if (rnd.nextInt(10) == 0) {
                b = java.util.Arrays.copyOf(b, rnd.nextInt(b.length));
            }
            Files.write(p, b);
            long before = THREADS.getCurrentThreadAllocatedBytes();
            try (GgufFile f = GgufFile.open(p)) {
                f.metadata().values().forEach(v -> { if (v instanceof List<?> l) { l.forEach(x -> { }); } });
                opened++;
            } catch (GgufFormatException e) {
                refused++;
                if (e.getMessage().contains("claims") || e.getMessage().contains("cannot fit")
                        || e.getMessage().contains("runs past") || e.getMessage().contains("2^63")
                        || e.getMessage().contains("longer than a Java array")) {
                    sizeChecksFired++;
                }
            } catch (Throwable t) { // an OutOfMemoryError included: the file is tiny, so any is a failure
                wrong.add("iteration " + iteration + ": " + t);
            }
            mostAllocated = Math.max(mostAllocated, THREADS.getCurrentThreadAllocatedBytes() - before);
        }
        assertThat(wrong).as("exceptions other than GgufFormatException").isEmpty();
        assertThat(opened + refused).isEqualTo(3000);
        assertThat(refused).isGreaterThan(1000);
        assertThat(sizeChecksFired).as("refusals by a count or size check").isGreaterThan(100);
        // A file of about a kilobyte: one open costs the parse's own objects, never an allocation sized by a count.
        assertThat(mostAllocated).as("most heap one open allocated").isLessThan(4L << 20);
    }

    @Test
    void aByteArrayCostsAboutItsOwnSizeOnTheHeapNotABoxedObjectPerByte() throws IOException {
        int n = 1 << 20;
        byte[] values = new byte[n];
        new Random(1).nextBytes(values);
        ByteBuffer b = ByteBuffer.allocate(64 + n).order(ByteOrder.LITTLE_ENDIAN)
                .putInt(GgufFile.MAGIC).putInt(3).putLong(0).putLong(1);
        putString(b, "k");
        b.putInt(GgufValueType.ARRAY.id()).putInt(GgufValueType.UINT8.id()).putLong(n).put(values);
        Path p = write("bytes.gguf", java.util.Arrays.copyOf(b.array(), b.position()));
        long before = THREADS.getCurrentThreadAllocatedBytes();
        try (GgufFile f = GgufFile.open(p)) {
            long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
            assertThat(allocated).as("heap allocated to load a %d-byte u8 array", n).isLessThan(2L * n);
            List<Object> list = f.getList("k");
            assertThat(list).hasSize(n);
            assertThat(list.get(0)).isEqualTo((long) Byte.toUnsignedInt(values[0]));
            assertThat(list.get(n - 1)).isEqualTo((long) Byte.toUnsignedInt(values[n - 1]));
        }
    }

    @Test
    void anArrayCountAbove2To31IsAFormatErrorNotANegativeCapacity() throws IOException {
        // A sparse file just long enough for the count to pass the "fits in the bytes left" check: nothing is written
        // beyond the header, and the reader must refuse before reading or allocating a single element.
        long count = (1L << 31) + 16;
        ByteBuffer b = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN)
                .putInt(GgufFile.MAGIC).putInt(3).putLong(0).putLong(1);
        putString(b, "k");
        b.putInt(GgufValueType.ARRAY.id()).putInt(GgufValueType.UINT8.id()).putLong(count);
        Path p = write("huge.gguf", java.util.Arrays.copyOf(b.array(), b.position()));
        try (RandomAccessFile raf = new RandomAccessFile(p.toFile(), "rw")) {
            raf.setLength(b.position() + count);
        }
        assertThatThrownBy(() -> GgufFile.open(p)).isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("longer than a Java array");
    }

    @Test
    void aTensorWhoseByteSizeOverflowsIsAFormatErrorNotAnArithmeticException() throws IOException {
        ByteBuffer b = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN)
                .putInt(GgufFile.MAGIC).putInt(3).putLong(1).putLong(0);
        putString(b, "w");
        b.putInt(1).putLong(1L << 62).putInt(GgmlType.F32.id()).putLong(0); // 2^62 floats: 2^64 bytes
        Path p = write("overflow.gguf", java.util.Arrays.copyOf(b.array(), b.position()));
        assertThatThrownBy(() -> GgufFile.open(p)).isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("tensor 'w'");
    }

    private static void putString(ByteBuffer b, String s) {
        byte[] bytes = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        b.putLong(bytes.length).put(bytes);
    }

    private Path write(String name, byte[] bytes) throws IOException {
        Path p = dir.resolve(name);
        Files.write(p, bytes);
        return p;
    }
}
