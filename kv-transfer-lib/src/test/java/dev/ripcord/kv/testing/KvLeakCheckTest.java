package dev.ripcord.kv.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

class KvLeakCheckTest {
    static TransferAgent leakedAgent;

    /** Run only through the test kit below (the nested class is not discovered on its own: no 'Test' suffix). */
    @ExtendWith(KvLeakCheck.class)
    static class LeavesASessionLive {
        @Test
        void opensAndForgets() {
            leakedAgent = TransferAgent.start(TransferAgentOptions.defaults("leaky"));
            KvRegion r = leakedAgent.allocateRegion(4096);
            leakedAgent.openReceive("req-forgotten", r, List.of(new ByteRange(0, 4096)));
        }
    }

    @ExtendWith(KvLeakCheck.class)
    static class CleansUp {
        @Test
        void opensAndCloses() {
            try (TransferAgent a = TransferAgent.start(TransferAgentOptions.defaults("tidy"))) {
                KvRegion r = a.allocateRegion(4096);
                a.openReceive("req-done", r, List.of(new ByteRange(0, 4096))).abort("done");
                r.close();
            }
        }
    }

    @Test
    void failsAClassThatLeavesAnythingLiveAndNamesIt() {
        System.setProperty("ripcord.kv.leakCheck.timeoutMillis", "200");
        try {
            List<Event> failures = EngineTestKit.engine("junit-jupiter").selectors(selectClass(LeavesASessionLive.class))
                    .execute().containerEvents().failed().list();
            assertThat(failures).hasSize(1);
            String message = failures.getFirst().getPayload(org.junit.platform.engine.TestExecutionResult.class)
                    .orElseThrow().getThrowable().orElseThrow().getMessage();
            assertThat(message).contains("AGENT", "REGION", "SESSION", "req-forgotten");
        } finally {
            System.clearProperty("ripcord.kv.leakCheck.timeoutMillis");
            leakedAgent.close();
        }
    }

    @Test
    void passesAClassThatReleasesEverything() {
        EngineTestKit.engine("junit-jupiter").selectors(selectClass(CleansUp.class)).execute().containerEvents()
                .assertStatistics(s -> s.failed(0));
    }
}
