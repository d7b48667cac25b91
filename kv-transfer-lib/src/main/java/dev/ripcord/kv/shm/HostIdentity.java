package dev.ripcord.kv.shm;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * Who "this host" is, for choosing the shared-memory backend: hostname, the kernel's boot id and the pid
 * namespace. Boot id: two machines (or one before and after a reboot) never look alike. Pid namespace: the
 * receiver judges whether a writer process is gone by its pid, so both ends must see the same pids; two
 * containers with their own pid namespaces fall back to TCP even if they share /dev/shm. Containers that share
 * all three are further told apart when the sender maps the receiver's files and checks the incarnation stored
 * in them.
 *
 * <p>What travels (in HELLO and in descriptors) is {@link #local()}: a SHA-256 of the three, which two processes
 * compare for equality and from which nobody learns the hostname or the boot id (a boot id is 122 random bits, so
 * the digest cannot be searched back either). Internal.
 */
public final class HostIdentity {
    private static final String HOSTNAME = hostnameNow();
    private static final String LOCAL = digest(HOSTNAME + "/" + read(Path.of("/proc/sys/kernel/random/boot_id"),
            "noboot") + "/" + pidNamespace());

    private HostIdentity() {
    }

    /** {@code sha256:} and 64 hex digits, equal in two processes exactly when they share host, boot and pids. */
    public static String local() {
        return LOCAL;
    }

    /** This machine's hostname, for an agent that must advertise an address; never sent as an identity. */
    public static String hostname() {
        return HOSTNAME;
    }

    private static String digest(String identity) {
        try {
            MessageDigest sha = MessageDigest.getInstance("SHA-256");
            sha.update("ripcord-kv-host-identity\n".getBytes(StandardCharsets.UTF_8));
            return "sha256:" + HexFormat.of().formatHex(sha.digest(identity.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }

    /** The pid namespace as digits (the inode of /proc/self/ns/pid), or "0" when unknown. */
    static String pidNamespaceId() {
        String digits = pidNamespace().replaceAll("\\D", "");
        return digits.isEmpty() ? "0" : digits;
    }

    private static String pidNamespace() {
        try {
            return Files.readSymbolicLink(Path.of("/proc/self/ns/pid")).toString();
        } catch (IOException | RuntimeException e) {
            return "pid:?";
        }
    }

    private static String hostnameNow() {
        String h = read(Path.of("/proc/sys/kernel/hostname"), null);
        if (h != null) {
            return h;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }

    private static String read(Path p, String fallback) {
        try {
            // Not Files.readString: it trusts the size /proc reports and can return a truncated value.
            try (var in = Files.newInputStream(p)) {
                return new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
            }
        } catch (IOException | RuntimeException e) {
            return fallback;
        }
    }
}
