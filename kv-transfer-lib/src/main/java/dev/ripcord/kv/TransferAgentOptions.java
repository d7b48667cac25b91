package dev.ripcord.kv;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/**
 * Configuration of a {@link TransferAgent}. Start from {@link #defaults(String)} (values that work on a laptop) and
 * adjust with the {@code with...} methods; a service maps its typed configuration properties onto this record.
 *
 * @param name           agent name, in logs, metrics ({@code agent} tag) and descriptors
 * @param bindHost       interface to listen on; default {@code 127.0.0.1} (use {@code 0.0.0.0} across hosts)
 * @param port           port to listen on; default 0 (ephemeral)
 * @param advertisedHost host put in descriptors; default {@code null}: the bind host, or the hostname when bound to
 *                       the wildcard address
 * @param backend        {@link Backend#AUTO} by default
 * @param shmDirectory   where shared-memory files live; default {@code /dev/shm} if writable, else
 *                       {@code java.io.tmpdir}
 * @param lease          silence from a peer tolerated before all its sessions abort; default 5 s. Heartbeats go
 *                       every quarter of the smaller of both sides' leases
 * @param connectTimeout TCP connect plus handshake; default 5 s
 * @param attachTimeout  how long a receive session waits for its sender to attach; default 30 s
 * @param closeTimeout   how long {@link TransferAgent#close()} waits for sessions to drain; default 10 s
 * @param ioThreads      Netty event-loop threads; default 2
 * @param maxPieceBytes  TCP writes are cut into DATA frames of at most this size: the unit of fair sharing
 *                       between sessions on a connection and of an abort's stop; default 1 MiB
 * @param shmPieceBytes  shared-memory copies are cut into fence brackets of at most this size: the longest an
 *                       abort waits for a copy in progress. Large enough for the copy to run at full memory
 *                       bandwidth (1 MiB pieces lose a third of it); default 8 MiB (about a millisecond)
 * @param fenceSlots     concurrent shared-memory receive sessions; default 16384 (1 MiB fence file)
 * @param maxConnections connections the listener holds at once (one per sending agent is the normal use); one
 *                       more is closed as it is accepted and counted. Default 256
 * @param meterRegistry  where metrics go; default a private {@link SimpleMeterRegistry}
 */
public record TransferAgentOptions(String name, String bindHost, int port, String advertisedHost, Backend backend,
                                   Path shmDirectory, Duration lease, Duration connectTimeout, Duration attachTimeout,
                                   Duration closeTimeout, int ioThreads, int maxPieceBytes, int shmPieceBytes,
                                   int fenceSlots, int maxConnections, MeterRegistry meterRegistry) {

    public TransferAgentOptions {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(bindHost, "bindHost");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(shmDirectory, "shmDirectory");
        Objects.requireNonNull(meterRegistry, "meterRegistry");
        Checks.requireArgument(!name.isBlank(), "agent name is blank");
        Checks.requireArgument(port >= 0 && port < 65536, "port %s", port);
        requirePositive(lease, "lease");
        requirePositive(connectTimeout, "connectTimeout");
        requirePositive(attachTimeout, "attachTimeout");
        requirePositive(closeTimeout, "closeTimeout");
        Checks.requireArgument(lease.toMillis() >= 20, "lease %s is below 20 ms", lease);
        Checks.requireArgument(ioThreads > 0, "ioThreads %s", ioThreads);
        Checks.requireArgument(maxPieceBytes >= 4096 && maxPieceBytes <= (64 << 20),
                "maxPieceBytes %s outside [4 KiB, 64 MiB]", maxPieceBytes);
        Checks.requireArgument(shmPieceBytes >= 4096, "shmPieceBytes %s below 4 KiB", shmPieceBytes);
        Checks.requireArgument(fenceSlots > 0 && fenceSlots <= (1 << 24), "fenceSlots %s", fenceSlots);
        Checks.requireArgument(maxConnections > 0, "maxConnections %s", maxConnections);
    }

    public static TransferAgentOptions defaults(String name) {
        return new TransferAgentOptions(name, "127.0.0.1", 0, null, Backend.AUTO, defaultShmDirectory(),
                Duration.ofSeconds(5), Duration.ofSeconds(5), Duration.ofSeconds(30), Duration.ofSeconds(10), 2,
                1 << 20, 8 << 20, 16384, 256, new SimpleMeterRegistry());
    }

    public TransferAgentOptions withBindHost(String v) {
        return new TransferAgentOptions(name, v, port, advertisedHost, backend, shmDirectory, lease, connectTimeout,
                attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withPort(int v) {
        return new TransferAgentOptions(name, bindHost, v, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withAdvertisedHost(String v) {
        return new TransferAgentOptions(name, bindHost, port, v, backend, shmDirectory, lease, connectTimeout,
                attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withBackend(Backend v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, v, shmDirectory, lease,
                connectTimeout, attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withShmDirectory(Path v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, v, lease, connectTimeout,
                attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withLease(Duration v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, v,
                connectTimeout, attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withConnectTimeout(Duration v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease, v,
                attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withAttachTimeout(Duration v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, v, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withCloseTimeout(Duration v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, attachTimeout, v, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withIoThreads(int v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, attachTimeout, closeTimeout, v, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withMaxPieceBytes(int v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, attachTimeout, closeTimeout, ioThreads, v, shmPieceBytes, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withShmPieceBytes(int v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, attachTimeout, closeTimeout, ioThreads, maxPieceBytes, v, fenceSlots, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withFenceSlots(int v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, v, maxConnections, meterRegistry);
    }

    public TransferAgentOptions withMaxConnections(int v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, v,
                meterRegistry);
    }

    public TransferAgentOptions withMeterRegistry(MeterRegistry v) {
        return new TransferAgentOptions(name, bindHost, port, advertisedHost, backend, shmDirectory, lease,
                connectTimeout, attachTimeout, closeTimeout, ioThreads, maxPieceBytes, shmPieceBytes, fenceSlots, maxConnections, v);
    }

    /** {@code /dev/shm} when it is a writable directory (tmpfs: no disk I/O), else {@code java.io.tmpdir}. */
    public static Path defaultShmDirectory() {
        Path shm = Path.of("/dev/shm");
        if (Files.isDirectory(shm) && Files.isWritable(shm)) {
            return shm;
        }
        return Path.of(System.getProperty("java.io.tmpdir"));
    }

    private static void requirePositive(Duration d, String what) {
        Objects.requireNonNull(d, what);
        Checks.requireArgument(!d.isNegative() && !d.isZero(), "%s %s must be positive", what, d);
    }
}
