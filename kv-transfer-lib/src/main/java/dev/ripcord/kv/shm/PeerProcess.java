package dev.ripcord.kv.shm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * A process on this host, identified by pid and start time (so a recycled pid is not mistaken for it). Used to
 * decide that a shared-memory writer that vanished mid-copy can write no more: a dead process has no mappings.
 * Internal.
 */
public record PeerProcess(long pid, long startMillis) {

    public static PeerProcess current() {
        ProcessHandle self = ProcessHandle.current();
        return new PeerProcess(self.pid(), startMillis(self));
    }

    /** True only when the process certainly runs no more (exited, zombie, or pid now names another process). */
    public boolean isGone() {
        Optional<ProcessHandle> h = ProcessHandle.of(pid);
        if (h.isEmpty() || !h.get().isAlive()) {
            return true;
        }
        if (startMillis != 0) {
            long now = startMillis(h.get());
            if (now != 0 && now != startMillis) {
                return true;
            }
        }
        return isZombie();
    }

    private boolean isZombie() {
        try {
            String stat;
            try (var in = Files.newInputStream(Path.of("/proc/" + pid + "/stat"))) {
                stat = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            }
            int close = stat.lastIndexOf(')');
            return close > 0 && close + 2 < stat.length() && stat.charAt(close + 2) == 'Z';
        } catch (Exception e) {
            return false;
        }
    }

    private static long startMillis(ProcessHandle h) {
        return h.info().startInstant().map(i -> i.toEpochMilli()).orElse(0L);
    }
}
