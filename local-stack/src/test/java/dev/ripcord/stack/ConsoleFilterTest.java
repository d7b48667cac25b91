package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * Regression: {@code ./ripcord up} relayed every line of every service (about 1,160 on a first start, 960 of them
 * during the warm-up), burying the one real warning.
 */
class ConsoleFilterTest {

    private static final List<String> OUTPUT = List.of(
            "WARNING: Using incubator modules: jdk.incubator.vector",
            "  .   ____          _            __ _ _",
            " :: Spring Boot ::                (v4.0.7)",
            "2026-12-06T04:10:01.100Z  INFO [] 4242 --- [gateway] [main] d.r.g.GatewayApplication : Starting",
            "2026-12-06T04:10:02.200Z  WARN [] 4242 --- [gateway] [main] o.a.k.c.NetworkClient : broker not up yet",
            "2026-12-06T04:10:03.300Z  INFO [r-1] 4242 --- [gateway] [nio-1] d.r.g.Relay : request r-1 done",
            "2026-12-06T04:10:04.400Z ERROR [r-2] 4242 --- [gateway] [nio-2] d.r.g.Relay : request r-2 failed",
            "java.lang.IllegalStateException: boom",
            "\tat dev.ripcord.gateway.Relay.run(Relay.java:42)",
            "2026-12-06T04:10:05.500Z  INFO [] 4242 --- [gateway] [main] d.r.g.GatewayApplication : Started",
            "[12.345s][error][aot] archivedBootLayer not available, disabling full module graph",
            "OpenJDK 64-Bit Server VM warning: Options -Xverify:none are deprecated");

    @Test
    void quietShowsWarningsErrorsTheirContinuationsAndJvmWarningsButNotHarmlessNoise() {
        ConsoleFilter quiet = new ConsoleFilter(false);

        List<String> shown = OUTPUT.stream().filter(quiet::show).toList();

        assertThat(shown).containsExactly(OUTPUT.get(4), OUTPUT.get(6), OUTPUT.get(7), OUTPUT.get(8), OUTPUT.get(11));
    }

    /** Regression: outside a trace, Boot pads the empty trace field to 49 blanks on every line. */
    @Test
    void theConsoleLineLeavesOutAnEmptyPaddedTraceField() {
        String line = "2026-12-06T05:14:36.510Z  WARN [] 6131 --- [gateway] [           main] ["
                + " ".repeat(49) + "] o.s.c.f.Catalog : Kotlin is present";

        assertThat(ConsoleFilter.compact(line)).isEqualTo(
                "2026-12-06T05:14:36.510Z  WARN [] 6131 --- [gateway] [           main] o.s.c.f.Catalog : Kotlin is present");
        String traced = "2026-12-06T05:14:36.510Z  WARN [r-1] 6131 --- [gateway] [main] [4bf92f35,00f067aa] x : y";
        assertThat(ConsoleFilter.compact(traced)).isEqualTo(traced);
    }

    @Test
    void verboseShowsEveryLine() {
        ConsoleFilter verbose = new ConsoleFilter(true);

        assertThat(OUTPUT.stream().filter(verbose::show).toList()).isEqualTo(OUTPUT);
    }
}
