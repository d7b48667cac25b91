package dev.ripcord.kv;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Everything a sender needs to push a request's KV into a receiver's pages: the value the control plane carries
 * from decode to prefill. Plain fields only, so it serialises as is with Jackson (records are supported), or as one
 * line with {@link #encode()} / {@link #parse(String)}.
 *
 * @param requestId        the request, for logs on both sides
 * @param agentName        the receiving agent
 * @param agentIncarnation random per agent start: a descriptor from before a restart is refused
 * @param tcpHost          where the receiving agent listens (control frames always, data with TCP)
 * @param tcpPort          its port
 * @param shmHost          the receiver's host identity digest when its region is shared memory, else {@code null}:
 *                         equal to the sender's exactly when both run on one host, boot and pid namespace
 * @param shmRegionFile    path of the shared region file, else {@code null}
 * @param shmFenceFile     path of the receiver's fence table, else {@code null}
 * @param fenceSlot        the session's slot in the fence table, {@code -1} without shared memory
 * @param epoch            the session's fence epoch (shared memory), {@code 0} without
 * @param sessionId        the receive session, unique within the agent incarnation
 * @param attachToken      random per session; ATTACH must present it, so the descriptor is the capability to
 *                         write into these pages (session ids alone are guessable)
 * @param regionId         the receiving region
 * @param targets          the receiver's pages; sender offsets address their concatenation, in list order
 * @param totalBytes       the sum of the target lengths
 */
public record ReceiveDescriptor(String requestId, String agentName, long agentIncarnation, String tcpHost,
                                int tcpPort, String shmHost, String shmRegionFile, String shmFenceFile,
                                int fenceSlot, long epoch, long sessionId, long attachToken, long regionId,
                                List<ByteRange> targets, long totalBytes) {
    private static final String PREFIX = "kvrd1";
    private static final String NULL = "~";

    public ReceiveDescriptor {
        Objects.requireNonNull(requestId, "requestId");
        Objects.requireNonNull(agentName, "agentName");
        Objects.requireNonNull(tcpHost, "tcpHost");
        targets = List.copyOf(targets);
        Checks.requireArgument(tcpPort > 0 && tcpPort < 65536, "tcpPort %s", tcpPort);
        Checks.requireArgument(!targets.isEmpty(), "no targets");
        long sum = 0;
        for (ByteRange r : targets) {
            sum += r.length();
        }
        Checks.requireArgument(sum == totalBytes, "totalBytes %s is not the sum of target lengths %s", totalBytes,
                sum);
    }

    /** True when the receiver offered the shared-memory backend for this transfer session. */
    public boolean offersSharedMemory() {
        return shmHost != null && shmRegionFile != null && shmFenceFile != null && fenceSlot >= 0;
    }

    /**
     * One line, {@code |}-separated, strings URL-encoded, {@code ~} for null, targets as
     * {@code offset+length,...}. Stable across versions that share the {@code kvrd1} prefix.
     */
    public String encode() {
        StringBuilder b = new StringBuilder(128 + targets.size() * 16).append(PREFIX);
        for (Object f : new Object[] {requestId, agentName, agentIncarnation, tcpHost, tcpPort, shmHost,
                shmRegionFile, shmFenceFile, fenceSlot, epoch, sessionId, attachToken, regionId, totalBytes}) {
            b.append('|').append(f == null ? NULL : f instanceof String s ? enc(s) : f.toString());
        }
        b.append('|');
        for (int i = 0; i < targets.size(); i++) {
            ByteRange r = targets.get(i);
            b.append(i == 0 ? "" : ",").append(r.offset()).append('+').append(r.length());
        }
        return b.toString();
    }

    /** Inverse of {@link #encode()}; throws {@link IllegalArgumentException} on anything else. */
    public static ReceiveDescriptor parse(String text) {
        String[] f = text.split("\\|", -1);
        Checks.requireArgument(f.length == 16 && f[0].equals(PREFIX), "not a receive descriptor: %s",
                text.length() > 80 ? text.substring(0, 80) + "..." : text);
        try {
            List<ByteRange> targets = new ArrayList<>();
            for (String r : f[15].split(",")) {
                int plus = r.indexOf('+');
                targets.add(new ByteRange(Long.parseLong(r.substring(0, plus)), Long.parseLong(r.substring(plus + 1))));
            }
            return new ReceiveDescriptor(str(f[1]), str(f[2]), Long.parseLong(f[3]), str(f[4]),
                    Integer.parseInt(f[5]), str(f[6]), str(f[7]), str(f[8]), Integer.parseInt(f[9]),
                    Long.parseLong(f[10]), Long.parseLong(f[11]), Long.parseLong(f[12]), Long.parseLong(f[13]),
                    targets, Long.parseLong(f[14]));
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("malformed receive descriptor: " + e.getMessage(), e);
        }
    }

    /** Short form for logs; {@link #encode()} is the full one. */
    @Override
    public String toString() {
        return "ReceiveDescriptor[request=" + requestId + ", agent=" + agentName + "@" + tcpHost + ":" + tcpPort
                + ", session=" + sessionId + ", region=" + regionId + ", " + targets.size() + " targets, "
                + totalBytes + " bytes" + (offersSharedMemory() ? ", shm slot " + fenceSlot + "/" + epoch : "")
                + "]";
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static String str(String s) {
        return s.equals(NULL) ? null : URLDecoder.decode(s, StandardCharsets.UTF_8);
    }
}
