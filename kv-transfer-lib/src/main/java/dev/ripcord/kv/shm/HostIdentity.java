package dev.ripcord.kv.shm;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Who "this host" is, for choosing the shared-memory backend: hostname, the kernel's boot id and the pid
 * namespace. Boot id: two machines (or one before and after a reboot) never look alike. Pid namespace: the
 * receiver judges whether a writer process is gone by its pid, so both ends must see the same pids; two
 * containers with their own pid namespaces fall back to TCP even if they share /dev/shm. Containers that share
 * all three are further told apart when the sender maps the receiver's files and checks the incarnation stored
 * in them. Internal.
 */
public final class HostIdentity {
    private static final String LOCAL = compute();

    private HostIdentity() {
    }

    public static String local() {
        return LOCAL;
    }

    private static String compute() {
        return hostname() + "/" + read(Path.of("/proc/sys/kernel/random/boot_id"), "noboot") + "/" + pidNamespace();
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

    private static String hostname() {
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
                return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
            }
        } catch (IOException | RuntimeException e) {
            return fallback;
        }
    }
}
