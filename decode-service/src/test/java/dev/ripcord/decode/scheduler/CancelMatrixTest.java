package dev.ripcord.decode.scheduler;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.kv.Backend;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.audit.AuditReport;
import dev.ripcord.lifecycle.audit.Auditor;
import dev.ripcord.lifecycle.audit.Invariant;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every phase × every cancel source × every propagation mode × both KV backends (TCP, and shared memory as on one
 * host: the sender copies into decode's pages inside the fence), through both workers in process (see
 * {@link CancelScenario} for what each run asserts: terminal state and reason/source on both workers, journal
 * order, exactly one abort, no leaked page, session, region or registration). A combination that cannot happen is
 * reported as skipped with the reason ({@link CancelScenario#meaningless()}), never left out silently.
 */
@ExtendWith(KvLeakCheck.class)
class CancelMatrixTest {

    private static final Map<Backend, TwoWorkers> workers = new EnumMap<>(Backend.class);
    private static final AtomicInteger ids = new AtomicInteger();

    @BeforeAll
    static void start() {
        workers.put(Backend.TCP, new TwoWorkers());
        workers.put(Backend.SHM, new TwoWorkers(1, Backend.SHM, Backend.SHM));
    }

    /**
     * The lifecycle log of the whole matrix, audited: every combination's events on both workers keep the invariants
     * (`ripcord audit`'s, but the gateway's: there is no gateway here), and every cancelled job was aborted once.
     */
    @AfterAll
    static void stop() {
        try {
            for (TwoWorkers w : workers.values()) {
                List<LifecycleEvent> events = w.lifecycleEvents();
                AuditReport report = Auditor.audit(events, List.of(),
                        new Auditor.Options(null, null, java.time.Duration.ZERO));
                assertThat(report.violations().stream()
                        .filter(v -> v.invariant() != Invariant.ONE_TERMINAL_OUTCOME).toList()).isEmpty();
                assertThat(report.losses()).isEmpty();
                assertThat(events).filteredOn(e -> e.type() == LifecycleEventType.ABORTED).isNotEmpty();
                assertThat(events).filteredOn(e -> e.type() == LifecycleEventType.KV_RELEASED).isNotEmpty();
                // Every free says how many pages the pool took back.
                assertThat(events).filteredOn(e -> e.type() == LifecycleEventType.PAGES_FREED).isNotEmpty()
                        .allSatisfy(e -> assertThat(e.pages()).as("%s", e).isNotNull().isNotNegative());
            }
            // The shared-memory workers really moved their KV through shared memory, and nothing over TCP.
            TwoWorkers shm = workers.get(Backend.SHM);
            assertThat(shm.prefillMeters.get("ripcord.kv.bytes").tag("direction", "sent").tag("backend", "shm")
                    .counter().count()).isPositive();
            assertThat(shm.prefillMeters.get("ripcord.kv.bytes").tag("direction", "sent").tag("backend", "tcp")
                    .counter().count()).isZero();
        } finally {
            workers.values().forEach(TwoWorkers::close);
        }
    }

    static List<Arguments> combinations() {
        List<Arguments> all = new ArrayList<>();
        for (CancelScenario.Phase phase : CancelScenario.Phase.values()) {
            for (CancelScenario.Source source : CancelScenario.Source.values()) {
                for (CancelScenario.Mode mode : CancelScenario.Mode.values()) {
                    for (Backend backend : List.of(Backend.TCP, Backend.SHM)) {
                        all.add(Arguments.of(phase, source, mode, backend));
                    }
                }
            }
        }
        return all;
    }

    @ParameterizedTest(name = "{0} × {1} × {2} × {3}")
    @MethodSource("combinations")
    void cancelEndsBothWorkersOnceAndLeavesNothing(CancelScenario.Phase phase, CancelScenario.Source source,
                                                  CancelScenario.Mode mode, Backend backend) {
        CancelScenario scenario = new CancelScenario(phase, source, mode, 40, 8);
        String skip = scenario.meaningless();
        Assumptions.assumeTrue(skip == null, skip);
        scenario.run(workers.get(backend), "matrix-" + ids.incrementAndGet());
    }
}
