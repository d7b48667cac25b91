package dev.ripcord.kv.shm;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.OptionalInt;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Names, location and cleanup of the shared-memory files. Every file is named
 * {@code ripcord-kv-<pid namespace>-<pid>-<incarnation>-...} so that files left by a process killed with -9 can
 * be recognised and removed by the next agent started in the same directory, and never files of a live process
 * in another pid namespace (a container sharing /dev/shm), whose pid means nothing here.
 *
 * <p>Files are created readable and writable by their owner only, from the instant they exist. A file a peer's
 * descriptor names is opened only through {@link #openNamed}: a Ripcord file directly inside the configured directory,
 * never through a symbolic link, a regular file owned by this user. Internal.
 */
public final class ShmFiles {
    private static final Logger log = LoggerFactory.getLogger(ShmFiles.class);
    private static final String PREFIX = "ripcord-kv-";
    private static final String NAMESPACE = HostIdentity.pidNamespaceId();
    private static final Pattern OWNER = Pattern.compile("^" + PREFIX + NAMESPACE + "-(\\d+)-.*");
    static final String REGION_SUFFIX = ".region";
    static final String FENCE_SUFFIX = ".fences";
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
    private static final OptionalInt UID = currentUid();

    private ShmFiles() {
    }


    public static Path fenceFile(Path dir, long pid, long incarnation) {
        return dir.resolve(PREFIX + NAMESPACE + "-" + pid + "-" + Long.toHexString(incarnation) + FENCE_SUFFIX);
    }

    public static Path regionFile(Path dir, long pid, long incarnation, long regionId) {
        return dir.resolve(PREFIX + NAMESPACE + "-" + pid + "-" + Long.toHexString(incarnation) + "-r" + regionId
                + REGION_SUFFIX);
    }

    /** Deletes Ripcord files whose owning process no longer runs. */
    public static void sweepStale(Path dir) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, PREFIX + NAMESPACE + "-*")) {
            for (Path f : files) {
                Matcher m = OWNER.matcher(f.getFileName().toString());
                if (m.matches() && !ProcessHandle.of(Long.parseLong(m.group(1))).map(ProcessHandle::isAlive)
                        .orElse(false)) {
                    log.info("deleting {} left behind by a process that is gone", f);
                    deleteQuietly(f);
                }
            }
        } catch (IOException | RuntimeException e) {
            log.debug("could not sweep {}: {}", dir, e.toString());
        }
    }

    /**
     * Creates {@code path}, which must not exist, with mode 0600 given to the create call itself: no other user can
     * open it at any instant. The umask only takes bits away, so group and others never have any; if it took the
     * owner's too they are put back (a WARN if that fails).
     */
    static FileChannel createOwnerOnly(Path path) throws IOException {
        Set<OpenOption> options = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                StandardOpenOption.WRITE);
        FileChannel ch;
        try {
            ch = FileChannel.open(path, options, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
        } catch (UnsupportedOperationException e) {
            log.warn("{} has no POSIX permissions: {} is created with the file system's defaults", path.getParent(),
                    path.getFileName());
            return FileChannel.open(path, options);
        }
        try {
            if (!Files.getPosixFilePermissions(path, LinkOption.NOFOLLOW_LINKS).equals(OWNER_ONLY)) {
                Files.setPosixFilePermissions(path, OWNER_ONLY);
            }
        } catch (IOException | RuntimeException e) {
            log.warn("could not give {} mode rw-------: {}", path, e.toString());
        }
        return ch;
    }

    /**
     * The file a peer's descriptor names, as a path in the real {@code dir}, if it may be opened: its name has no
     * {@code .} or {@code ..}, it is a Ripcord file ending in {@code suffix}, its directory is {@code dir} (compared as
     * real paths, links resolved), and it is not a symbolic link. Opens nothing.
     */
    static Path confine(Path dir, String named, String suffix) throws IOException {
        if (named == null) {
            throw new RefusedShmFileException("(none)", "the descriptor names no file");
        }
        Path p;
        try {
            p = Path.of(named);
        } catch (RuntimeException e) {
            throw new RefusedShmFileException(named, "not a path");
        }
        for (Path part : p) {
            if (part.toString().equals("..") || part.toString().equals(".")) {
                throw new RefusedShmFileException(named, "the path has . or .. in it");
            }
        }
        Path fileName = p.getFileName();
        String name = fileName == null ? "" : fileName.toString();
        if (!name.startsWith(PREFIX) || !name.endsWith(suffix)) {
            throw new RefusedShmFileException(named, "not a Ripcord " + suffix + " file");
        }
        Path realDir = dir.toRealPath();
        Path parent = p.toAbsolutePath().getParent();
        Path realParent;
        try {
            realParent = parent == null ? null : parent.toRealPath();
        } catch (IOException e) {
            realParent = null;
        }
        if (!realDir.equals(realParent)) {
            throw new RefusedShmFileException(named, "not in the shared-memory directory " + realDir);
        }
        Path file = realDir.resolve(name);
        if (Files.isSymbolicLink(file)) {
            throw new RefusedShmFileException(named, "a symbolic link");
        }
        return file;
    }

    /**
     * Opens read-write the file a peer's descriptor names, after {@link #confine}; never through a symbolic link
     * ({@code O_NOFOLLOW}, so a link swapped in after the check is refused too), and only a regular file owned by this
     * process's user. The caller still checks the file's header before trusting any size in it.
     */
    static FileChannel openNamed(Path dir, String named, String suffix) throws IOException {
        Path file = confine(dir, named, suffix);
        FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE,
                LinkOption.NOFOLLOW_LINKS);
        try {
            PosixFileAttributes a = Files.readAttributes(file, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            if (!a.isRegularFile()) {
                throw new RefusedShmFileException(named, "not a regular file");
            }
            if (UID.isPresent()) {
                int owner = (Integer) Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS);
                if (owner != UID.getAsInt()) {
                    throw new RefusedShmFileException(named, "owned by uid " + owner + ", not this process's "
                            + UID.getAsInt());
                }
            }
            return ch;
        } catch (IOException | RuntimeException e) {
            ch.close();
            throw e;
        }
    }

    /** This process's uid: the owner of {@code /proc/self}; empty where the file system cannot say. */
    private static OptionalInt currentUid() {
        try {
            return OptionalInt.of((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (IOException | RuntimeException e) {
            log.debug("cannot learn this process's uid ({}); shared-memory files are not checked for owner",
                    e.toString());
            return OptionalInt.empty();
        }
    }

    static void deleteQuietly(Path path) {
        try {
            Files.deleteIfExists(path);
        } catch (IOException e) {
            log.warn("could not delete {}: {}", path, e.toString());
        }
    }
}
