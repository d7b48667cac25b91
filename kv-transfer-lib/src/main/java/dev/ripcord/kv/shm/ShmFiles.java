package dev.ripcord.kv.shm;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Names, location and cleanup of the shared-memory files. Every file is named
 * {@code ripcord-kv-<pid namespace>-<pid>-<incarnation>-...} so that files left by a process killed with -9 can
 * be recognised and removed by the next agent started in the same directory, and never files of a live process
 * in another pid namespace (a container sharing /dev/shm), whose pid means nothing here. Internal.
 */
public final class ShmFiles {
    private static final Logger log = LoggerFactory.getLogger(ShmFiles.class);
    private static final String PREFIX = "ripcord-kv-";
    private static final String NAMESPACE = HostIdentity.pidNamespaceId();
    private static final Pattern OWNER = Pattern.compile("^" + PREFIX + NAMESPACE + "-(\\d+)-.*");

    private ShmFiles() {
    }

    /** {@code /dev/shm} when it is a writable directory (tmpfs: no disk I/O), else {@code java.io.tmpdir}. */
    public static Path defaultDirectory() {
        Path shm = Path.of("/dev/shm");
        if (Files.isDirectory(shm) && Files.isWritable(shm)) {
            return shm;
        }
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    public static Path fenceFile(Path dir, long pid, long incarnation) {
        return dir.resolve(PREFIX + NAMESPACE + "-" + pid + "-" + Long.toHexString(incarnation) + ".fences");
    }

    public static Path regionFile(Path dir, long pid, long incarnation, long regionId) {
        return dir.resolve(PREFIX + NAMESPACE + "-" + pid + "-" + Long.toHexString(incarnation) + "-r" + regionId
                + ".region");
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

    static void ownerOnly(Path path) {
        try {
            Files.setPosixFilePermissions(path, PosixFilePermissions.fromString("rw-------"));
        } catch (UnsupportedOperationException | IOException e) {
            log.debug("could not restrict permissions of {}: {}", path, e.toString());
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
