package dev.ripcord.stack;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

class FreePortsTest {

    @Test
    void portsAreDistinctFreeAvoidTheGivenOnesAndStayBelowTheEphemeralRange() throws Exception {
        int ceiling = FreePorts.ephemeralLow(Path.of("/proc/sys/net/ipv4/ip_local_port_range"));
        Set<Integer> avoid = new HashSet<>(FreePorts.choose(20, Set.of()));
        List<Integer> ports = FreePorts.choose(40, avoid);

        assertThat(ports).hasSize(40).doesNotHaveDuplicates().doesNotContainAnyElementsOf(avoid);
        if (ceiling - FreePorts.FLOOR >= 1_000) {
            assertThat(ports).allSatisfy(p -> assertThat(p).isBetween(FreePorts.FLOOR, ceiling - 1));
        }
        for (int port : ports) { // free when chosen: each can be bound now
            try (java.net.ServerSocket socket = new java.net.ServerSocket(port)) {
                assertThat(socket.getLocalPort()).isEqualTo(port);
            }
        }
    }

    /**
     * Regression: the range was read with {@code Files.readString}, which sizes its read by the file's size, and a
     * procfs file reports 0 (on some kernels and sandboxes the read then returned "3"): the ceiling came out as 3,
     * every port was the kernel's ephemeral choice, and an outgoing connection took a service's port before it bound
     * it ("Port ... was already in use").
     */
    @Test
    void theKernelsRangeFileIsReadWhole() throws Exception {
        Path kernel = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isReadable(kernel), "no " + kernel + " on this system");
        String first;
        try (var reader = Files.newBufferedReader(kernel)) {
            first = reader.readLine().trim().split("\\s+")[0];
        }
        assertThat(FreePorts.ephemeralLow(kernel)).isEqualTo(Integer.parseInt(first));
    }

    @Test
    void theEphemeralRangeIsReadFromTheKernelsFileOrDefaults(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ip_local_port_range");
        Files.writeString(file, "40000\t60999\n");
        assertThat(FreePorts.ephemeralLow(file)).isEqualTo(40_000);
        Files.writeString(file, "garbage");
        assertThat(FreePorts.ephemeralLow(file)).isEqualTo(32_768);
        assertThat(FreePorts.ephemeralLow(dir.resolve("absent"))).isEqualTo(32_768);
    }
}
