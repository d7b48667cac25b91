package dev.ripcord.engine.kernel;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Set;

/**
 * Loads the engine's native kernel library from the engine's jar.
 *
 * <p>The build compiles {@code src/main/c} for the build host's platform into
 * {@code dev/ripcord/engine/native/<platform>/libripcord_kernels.so} and records its SHA-256 next to it
 * ({@code .sha256}). Loading copies the bytes into a private directory — {@code $XDG_CACHE_HOME/ripcord/native}
 * or {@code ~/.cache/ripcord/native}, else {@code <java.io.tmpdir>/ripcord-native-<user>} — that must be a real
 * directory (not a link) owned by this user with permissions {@code rwx------}, under a name that includes the
 * digest, and loads it only after the file's own digest matches the recorded one. A directory another user could
 * write, or a file whose bytes do not match, is refused (the engine then runs the Vector API kernels), so no
 * library is ever loaded from a path a stranger can write.
 */
final class NativeLibrary {
    static final String NAME = "ripcord_kernels";
    private static final Set<PosixFilePermission> PRIVATE = PosixFilePermissions.fromString("rwx------");

    private NativeLibrary() {
    }

    /** {@code linux-x86_64}, {@code linux-aarch64}, or null where the build produces no library. */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (!os.startsWith("linux")) {
            return null;
        }
        return switch (arch) {
            case "amd64", "x86_64" -> "linux-x86_64";
            case "aarch64", "arm64" -> "linux-aarch64";
            default -> null;
        };
    }

    static String resource(String platform) {
        return "/dev/ripcord/engine/native/" + platform + "/lib" + NAME + ".so";
    }

    /** The default private directory (see the class note). */
    static Path defaultDirectory() {
        String xdg = System.getenv("XDG_CACHE_HOME");
        String home = System.getProperty("user.home");
        if (xdg != null && !xdg.isBlank() && Path.of(xdg).isAbsolute()) {
            return Path.of(xdg, "ripcord", "native");
        }
        if (home != null && !home.isBlank() && !home.equals("?") && Files.isDirectory(Path.of(home))) {
            return Path.of(home, ".cache", "ripcord", "native");
        }
        return Path.of(System.getProperty("java.io.tmpdir"), "ripcord-native-" + System.getProperty("user.name"));
    }

    /**
     * The library's bytes from the class path with their recorded digest, or null if this build has none for the
     * platform (built without a C compiler, or another platform).
     */
    static Packaged packaged() throws IOException {
        String platform = platform();
        if (platform == null) {
            return null;
        }
        try (InputStream lib = NativeLibrary.class.getResourceAsStream(resource(platform));
             InputStream sum = NativeLibrary.class.getResourceAsStream(resource(platform) + ".sha256")) {
            if (lib == null || sum == null) {
                return null;
            }
            String digest = new String(sum.readAllBytes(), StandardCharsets.US_ASCII).trim().split("\\s+")[0]
                    .toLowerCase(Locale.ROOT);
            return new Packaged(lib.readAllBytes(), digest);
        }
    }

    /** The library's bytes and the SHA-256 (lower-case hex) the build recorded for them. */
    record Packaged(byte[] bytes, String sha256) {
    }

    /**
     * Writes {@code lib} into {@code directory} (created private if missing) after checking its digest, and
     * returns the verified file. An existing file of the same name is reused only if its digest matches.
     *
     * @throws SecurityException if the directory or file is not private to this user, or a digest does not match
     */
    static Path extract(Packaged lib, Path directory) throws IOException {
        requireDigest(lib.bytes(), lib.sha256(), "the packaged library");
        Path dir = privateDirectory(directory);
        Path file = dir.resolve("lib" + NAME + "-" + lib.sha256().substring(0, 16) + ".so");
        if (Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            requireOwnedRegularFile(file);
            if (sha256(Files.readAllBytes(file)).equals(lib.sha256())) {
                return file;
            }
            Files.delete(file);
        }
        Path tmp = Files.createTempFile(dir, "lib" + NAME, ".tmp");
        try {
            Files.write(tmp, lib.bytes());
            Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("r-x------"));
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
        requireOwnedRegularFile(file);
        requireDigest(Files.readAllBytes(file), lib.sha256(), file.toString());
        return file;
    }

    /** Loads a verified library file for the life of the process (kernels are process-wide, like the JIT's). */
    static SymbolLookup load(Path file) {
        // Arena.global(): the library stays mapped for the process's lifetime; its functions may be running on
        // any engine's workers, and there is no point at which all of them are known to be done.
        return SymbolLookup.libraryLookup(file, Arena.global());
    }

    private static Path privateDirectory(Path dir) throws IOException {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectories(dir.getParent());
            try {
                Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PRIVATE));
                Files.setPosixFilePermissions(dir, PRIVATE); // the umask may have taken bits away
            } catch (java.nio.file.FileAlreadyExistsException raced) {
                // another engine created it meanwhile: checked below like any existing directory
            }
        }
        PosixFileAttributes attrs = attributes(dir);
        if (!attrs.isDirectory() || attrs.isSymbolicLink()) {
            throw new SecurityException(dir + " is not a directory");
        }
        requireOwner(dir, attrs);
        if (!attrs.permissions().equals(PRIVATE)) {
            throw new SecurityException(dir + " has permissions " + PosixFilePermissions.toString(attrs.permissions())
                    + ", not rwx------");
        }
        return dir;
    }

    private static void requireOwnedRegularFile(Path file) throws IOException {
        PosixFileAttributes attrs = attributes(file);
        if (!attrs.isRegularFile()) {
            throw new SecurityException(file + " is not a regular file");
        }
        requireOwner(file, attrs);
        Set<PosixFilePermission> p = attrs.permissions();
        if (p.contains(PosixFilePermission.GROUP_WRITE) || p.contains(PosixFilePermission.OTHERS_WRITE)) {
            throw new SecurityException(file + " is writable by others");
        }
    }

    private static PosixFileAttributes attributes(Path p) throws IOException {
        PosixFileAttributeView view = Files.getFileAttributeView(p, PosixFileAttributeView.class,
                LinkOption.NOFOLLOW_LINKS);
        if (view == null) {
            throw new SecurityException("no POSIX permissions on " + p + "'s file system");
        }
        return view.readAttributes();
    }

    private static void requireOwner(Path p, PosixFileAttributes attrs) throws IOException {
        UserPrincipal me = p.getFileSystem().getUserPrincipalLookupService()
                .lookupPrincipalByName(System.getProperty("user.name"));
        if (!attrs.owner().equals(me)) {
            throw new SecurityException(p + " is owned by " + attrs.owner().getName() + ", not " + me.getName());
        }
    }

    private static void requireDigest(byte[] bytes, String expected, String what) {
        String actual = sha256(bytes);
        if (!actual.equals(expected)) {
            throw new SecurityException(what + " has SHA-256 " + actual + ", the build recorded " + expected);
        }
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
