package dev.ripcord.stack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for the launcher's listeners (services, actuators, Kafka nodes), chosen free and <em>below the kernel's
 * ephemeral range</em>.
 *
 * <p>A port is chosen before the process that will listen on it starts, seconds later. A port from the ephemeral
 * range (what {@code new ServerSocket(0)} hands out, 32768–60999 on Linux by default) is also what every outgoing
 * connection on the machine takes its local port from: a Kafka client, a test's HTTP client, another build. On a busy
 * machine one of them took a chosen port in between, and a service failed to start ("Port … was already in use").
 * Below the ephemeral range only listeners take ports, and each chosen one was bound here once to check it is free.
 * Where the range cannot be read, or leaves no room below it, this falls back to the kernel's choice. A port is
 * handed out once per JVM.
 */
public final class FreePorts {

    /** The lowest port chosen: above the ports services usually own. */
    static final int FLOOR = 10_000;

    /**
     * Every port this JVM handed out: never handed out twice, so that two stacks chosen at the same moment in one JVM
     * (test classes that run side by side) cannot both get a port that neither has bound yet.
     */
    private static final Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private FreePorts() {
    }

    /** One free port. */
    public static int one() {
        return choose(1, Set.of()).getFirst();
    }

    /**
     * {@code count} distinct free ports, none in {@code avoid}. Every socket is held until all are chosen, so the
     * ports differ from each other.
     */
    public static List<Integer> choose(int count, Set<Integer> avoid) {
        int ceiling = ephemeralLow(Path.of("/proc/sys/net/ipv4/ip_local_port_range"));
        List<ServerSocket> held = new ArrayList<>();
        try {
            List<Integer> ports = new ArrayList<>();
            int span = ceiling - FLOOR;
            int tries = 0;
            while (ports.size() < count) {
                ServerSocket socket;
                if (span >= 1_000 && tries++ < 10_000) {
                    int port = FLOOR + ThreadLocalRandom.current().nextInt(span);
                    if (avoid.contains(port) || ports.contains(port) || HANDED_OUT.contains(port)) {
                        continue;
                    }
                    try {
                        socket = new ServerSocket(port);
                    } catch (IOException taken) {
                        continue;
                    }
                } else {
                    socket = new ServerSocket(0);
                }
                held.add(socket);
                int port = socket.getLocalPort();
                if (!avoid.contains(port) && !ports.contains(port) && HANDED_OUT.add(port)) {
                    ports.add(port);
                }
            }
            return ports;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot find a free port", e);
        } finally {
            for (ServerSocket socket : held) {
                try {
                    socket.close();
                } catch (IOException e) {
                    // a listening socket of our own; nothing to do
                }
            }
        }
    }

    /**
     * The first port of the ephemeral range as {@code file} gives it ({@code "32768\t60999"}); where it cannot be
     * read, 32768 (Linux's default, and inside IANA's dynamic range on other systems too).
     */
    static int ephemeralLow(Path file) {
        // A line reader, not Files.readString: that sizes its read by the file's size, which a procfs file reports as
        // 0, and on some kernels and sandboxes it then returned one byte ("3").
        try (java.io.BufferedReader reader = Files.newBufferedReader(file)) {
            String[] parts = reader.readLine().trim().split("\\s+");
            return Integer.parseInt(parts[0]);
        } catch (IOException | RuntimeException e) {
            return 32_768;
        }
    }
}
