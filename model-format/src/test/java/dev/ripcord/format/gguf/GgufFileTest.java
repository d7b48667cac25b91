package dev.ripcord.format.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.NoSuchElementException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GgufFileTest {
    @TempDir
    Path dir;

    private static GgufWriter everyValueType() {
        return new GgufWriter()
                .putString("general.architecture", "llama")
                .put("u8", GgufValueType.UINT8, 255)
                .put("i8", GgufValueType.INT8, -128)
                .put("u16", GgufValueType.UINT16, 65535)
                .put("i16", GgufValueType.INT16, -32768)
                .putU32("u32", 0xFFFF_FFFFL)
                .putI32("i32", Integer.MIN_VALUE)
                .putU64("u64", 1L << 40)
                .put("i64", GgufValueType.INT64, -5L)
                .putF32("f32", 1.5f)
                .put("f64", GgufValueType.FLOAT64, Math.PI)
                .putBool("yes", true)
                .putBool("no", false)
                .putString("utf8", "héllo ▁wörld 🙂")
                .putArray("tokens", GgufValueType.STRING, List.of("<unk>", "<s>", "</s>", ""))
                .putArray("scores", GgufValueType.FLOAT32, List.of(0f, -1.25f))
                .putArray("types", GgufValueType.INT32, List.of(2, 3, 3, 1))
                .putArray("empty", GgufValueType.UINT8, List.of())
                .put("nested", GgufValueType.ARRAY, new GgufArray(GgufValueType.ARRAY, List.of(
                        new GgufArray(GgufValueType.UINT16, List.of(1, 2)),
                        new GgufArray(GgufValueType.STRING, List.of("x")))));
    }

    @Test
    void everyMetadataValueTypeReadsBackAsTheContractedJavaType() throws IOException {
        Path p = dir.resolve("m.gguf");
        everyValueType().write(p);
        try (GgufFile f = GgufFile.open(p)) {
            assertThat(f.version()).isEqualTo(3);
            assertThat(f.metadata()).containsExactly(
                    java.util.Map.entry("general.architecture", "llama"),
                    java.util.Map.entry("u8", 255L),
                    java.util.Map.entry("i8", -128L),
                    java.util.Map.entry("u16", 65535L),
                    java.util.Map.entry("i16", -32768L),
                    java.util.Map.entry("u32", 0xFFFF_FFFFL),
                    java.util.Map.entry("i32", (long) Integer.MIN_VALUE),
                    java.util.Map.entry("u64", 1L << 40),
                    java.util.Map.entry("i64", -5L),
                    java.util.Map.entry("f32", 1.5f),
                    java.util.Map.entry("f64", Math.PI),
                    java.util.Map.entry("yes", true),
                    java.util.Map.entry("no", false),
                    java.util.Map.entry("utf8", "héllo ▁wörld 🙂"),
                    java.util.Map.entry("tokens", List.of("<unk>", "<s>", "</s>", "")),
                    java.util.Map.entry("scores", List.of(0f, -1.25f)),
                    java.util.Map.entry("types", List.of(2L, 3L, 3L, 1L)),
                    java.util.Map.entry("empty", List.of()),
                    java.util.Map.entry("nested", List.of(List.of(1L, 2L), List.of("x"))));
            assertThat(f.getString("general.architecture")).isEqualTo("llama");
            assertThat(f.getLong("u32")).isEqualTo(0xFFFF_FFFFL);
            assertThat(f.getInt("i32")).isEqualTo(Integer.MIN_VALUE);
            assertThat(f.getFloat("f32")).isEqualTo(1.5f);
            assertThat(f.getFloat("f64")).isEqualTo((float) Math.PI);
            assertThat(f.getBoolean("yes")).isTrue();
            assertThat(f.getList("tokens")).containsExactly("<unk>", "<s>", "</s>", "");
            assertThat(f.findString("absent")).isEmpty();
            assertThat(f.findLong("u8")).contains(255L);
            assertThatThrownBy(() -> f.getString("absent")).isInstanceOf(NoSuchElementException.class).hasMessageContaining("absent");
            assertThatThrownBy(() -> f.getString("u8")).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'u8' is integer, expected string");
            assertThatThrownBy(() -> f.getInt("u64")).isInstanceOf(IllegalArgumentException.class);
            assertThat(f.tensors()).isEmpty();
        }
    }

    @Test
    void tensorsAreMappedAtAlignedOffsetsWithFastestDimensionFirst() throws IOException {
        for (int alignment : new int[] {32, 64, 1}) {
            Path p = dir.resolve("t" + alignment + ".gguf");
            float[] a = {1, 2, 3, 4, 5, 6};
            byte[] q = new byte[34 * 2];
            for (int i = 0; i < q.length; i++) {
                q[i] = (byte) i;
            }
            GgufWriter w = new GgufWriter().putString("general.architecture", "llama");
            if (alignment != 32) {
                w.alignment(alignment);
            }
            w.addTensor("a", new long[] {3, 2}, a)
                    .addTensor("q", new long[] {64}, GgmlType.Q8_0, MemorySegment.ofArray(q))
                    .write(p);
            try (GgufFile f = GgufFile.open(p)) {
                assertThat(f.alignment()).isEqualTo(alignment);
                assertThat(f.dataOffset() % alignment).isZero();
                GgufTensorInfo ta = f.tensor("a").orElseThrow();
                assertThat(ta.dims()).containsExactly(3, 2);
                assertThat(ta.type()).isEqualTo(GgmlType.F32);
                assertThat(ta.elementCount()).isEqualTo(6);
                assertThat(f.tensorData("a").toArray(ValueLayout.JAVA_FLOAT)).containsExactly(a);
                GgufTensorInfo tq = f.tensor("q").orElseThrow();
                assertThat(tq.offset() % alignment).isZero();
                assertThat(tq.byteSize()).isEqualTo(68);
                assertThat(f.tensorData(tq).toArray(ValueLayout.JAVA_BYTE)).containsExactly(q);
                assertThat(f.tensorData(tq).isReadOnly()).isTrue();
            }
        }
    }

    @Test
    void closeReleasesTheMappingExactlyOnceAndMetadataOutlivesIt() throws IOException {
        Path p = dir.resolve("c.gguf");
        new GgufWriter().putString("k", "v").addTensor("a", new long[] {4}, new float[] {1, 2, 3, 4}).write(p);
        GgufFile f = GgufFile.open(p);
        MemorySegment data = f.tensorData("a");
        f.close();
        f.close();
        assertThatThrownBy(() -> data.get(ValueLayout.JAVA_FLOAT, 0)).isInstanceOf(IllegalStateException.class);
        assertThat(f.getString("k")).isEqualTo("v");
    }

    @Test
    void everyTruncationIsAFormatErrorNamingTheOffsetNeverAnIndexError() throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        everyValueType().addTensor("a", new long[] {8}, new float[8]).write(bos);
        byte[] whole = bos.toByteArray();
        for (int len = 0; len < whole.length; len++) {
            Path p = dir.resolve("trunc.gguf");
            Files.write(p, java.util.Arrays.copyOf(whole, len));
            final int l = len;
            assertThatThrownBy(() -> GgufFile.open(p))
                    .as("truncated to %d bytes", l)
                    .isInstanceOf(GgufFormatException.class)
                    .hasMessageContaining("at byte ");
        }
    }

    @Test
    void truncatedMetadataNamesWhatWasExpected() throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        new GgufWriter().putString("general.name", "stories").write(bos);
        byte[] whole = bos.toByteArray();
        Path p = dir.resolve("t.gguf");
        Files.write(p, java.util.Arrays.copyOf(whole, whole.length - 3));
        assertThatThrownBy(() -> GgufFile.open(p))
                .isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("at byte 48")  // 24 header + 20 key + 4 type: the string length
                .hasMessageContaining("'general.name'");
    }

    @Test
    void unknownValueTypeIsNamedWithItsOffset() throws IOException {
        ByteBuffer b = header(0, 1);
        putString(b, "k");
        b.putInt(13);
        Path p = write(b);
        assertThatThrownBy(() -> GgufFile.open(p))
                .isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("at byte 33")
                .hasMessageContaining("unknown metadata value type 13 for key 'k'");
    }

    @Test
    void unknownTensorTypeAndBadMagicAndVersionAreNamed() throws IOException {
        ByteBuffer b = header(1, 0);
        putString(b, "w");
        b.putInt(1).putLong(32).putInt(4).putLong(0);
        assertThatThrownBy(() -> GgufFile.open(write(b))).isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("unknown ggml type id 4");

        ByteBuffer m = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).put("GGML".getBytes()).putInt(3).putLong(0);
        assertThatThrownBy(() -> GgufFile.open(write(m))).isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("not a GGUF file");

        ByteBuffer v = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN).putInt(GgufFile.MAGIC).putInt(1).putLong(0).putLong(0);
        assertThatThrownBy(() -> GgufFile.open(write(v))).isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("GGUF version 1 is not supported");
    }

    @Test
    void versionTwoReadsLikeVersionThree() throws IOException {
        ByteArrayOutputStream bos = new ByteArrayOutputStream();
        new GgufWriter().putU32("llama.block_count", 6).addTensor("a", new long[] {2}, new float[] {7, 8}).write(bos);
        byte[] bytes = bos.toByteArray();
        bytes[4] = 2;
        Path p = dir.resolve("v2.gguf");
        Files.write(p, bytes);
        try (GgufFile f = GgufFile.open(p)) {
            assertThat(f.version()).isEqualTo(2);
            assertThat(f.getLong("llama.block_count")).isEqualTo(6);
            assertThat(f.tensorData("a").toArray(ValueLayout.JAVA_FLOAT)).containsExactly(7, 8);
        }
    }

    @Test
    void absurdCountsAreCorruptionNotAllocations() throws IOException {
        ByteBuffer b = header(0, 1);
        putString(b, "k");
        b.putInt(GgufValueType.ARRAY.id()).putInt(GgufValueType.UINT64.id()).putLong(Long.MAX_VALUE / 2);
        assertThatThrownBy(() -> GgufFile.open(write(b))).isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("array 'k' claims");
        ByteBuffer c = header(Long.MAX_VALUE, 0);
        assertThatThrownBy(() -> GgufFile.open(write(c))).isInstanceOf(GgufFormatException.class)
                .hasMessageContaining("tensor count");
    }

    @Test
    void isGgufLooksAtTheMagicOnly() throws IOException {
        Path g = dir.resolve("g.gguf");
        new GgufWriter().write(g);
        Path other = dir.resolve("model.bin");
        Files.write(other, new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
        Path tiny = dir.resolve("tiny");
        Files.write(tiny, new byte[] {'G', 'G'});
        assertThat(GgufFile.isGguf(g)).isTrue();
        assertThat(GgufFile.isGguf(other)).isFalse();
        assertThat(GgufFile.isGguf(tiny)).isFalse();
    }

    private static ByteBuffer header(long tensors, long kvs) {
        return ByteBuffer.allocate(256).order(ByteOrder.LITTLE_ENDIAN).putInt(GgufFile.MAGIC).putInt(3).putLong(tensors).putLong(kvs);
    }

    private static void putString(ByteBuffer b, String s) {
        byte[] bytes = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        b.putLong(bytes.length).put(bytes);
    }

    private Path write(ByteBuffer b) throws IOException {
        Path p = Files.createTempFile(dir, "x", ".gguf");
        Files.write(p, java.util.Arrays.copyOf(b.array(), b.position()));
        return p;
    }
}
