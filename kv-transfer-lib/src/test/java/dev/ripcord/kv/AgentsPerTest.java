package dev.ripcord.kv;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/**
 * Base of the in-process transfer tests: the agents a test starts ({@link #agent}) share one meter registry and are
 * closed after it, newest first; {@link #get} bounds every wait on a future.
 */
abstract class AgentsPerTest {
    static final Duration WAIT = Duration.ofSeconds(10);

    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    final List<TransferAgent> agents = new ArrayList<>();

    @BeforeAll
    static void pollFast() {
        Awaitility.setDefaultPollDelay(Duration.ZERO);
        Awaitility.setDefaultPollInterval(Duration.ofMillis(1));
    }

    TransferAgent agent(TransferAgentOptions options) {
        TransferAgent a = TransferAgent.start(options.withMeterRegistry(registry));
        agents.add(a);
        return a;
    }

    @AfterEach
    void closeAgents() {
        agents.reversed().forEach(TransferAgent::close);
    }

    static <T> T get(CompletableFuture<T> f) throws Exception {
        return f.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }
}
