package dev.ripcord.gateway.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.ripcord.gateway.resilience.ResilienceProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Discovery against a fake DNS: pods that come and go change routing without a restart; legs in flight finish. */
class WorkerDiscoveryTest {

    private static final URI HEADLESS = URI.create("dns+http://decode-headless.ripcord.svc:8082");

    /** A DNS whose answer the test sets; {@code null} answers "no such name". */
    private static final class FakeDns implements WorkerDiscovery.HostResolver {
        private volatile List<String> addresses = List.of();
        private final List<String> asked = new CopyOnWriteArrayList<>();

        @Override
        public List<InetAddress> lookup(String host) throws UnknownHostException {
            asked.add(host);
            List<String> now = addresses;
            if (now == null) {
                throw new UnknownHostException(host);
            }
            List<InetAddress> result = new ArrayList<>();
            for (String a : now) {
                result.add(InetAddress.getByName(a)); // literal IPs: no lookup
            }
            return result;
        }
    }

    private final WorkerResilience resilience = new WorkerResilience(ResilienceProperties.defaults());
    private final WorkerPool pool = new WorkerPool("decode", resilience);
    private final FakeDns dns = new FakeDns();

    private WorkerDiscovery discovery() {
        return new WorkerDiscovery(pool, List.of(HEADLESS), dns, Duration.ZERO); // refreshed by the test
    }

    private List<String> names() {
        return pool.instances().stream().map(WorkerInstance::name).toList();
    }

    @Test
    void everyAddressOfTheHeadlessNameIsAWorker() {
        dns.addresses = List.of("10.0.0.2", "10.0.0.1");
        try (WorkerDiscovery d = discovery()) {
            assertThat(dns.asked).containsOnly("decode-headless.ripcord.svc");
            assertThat(pool.instances()).extracting(WorkerInstance::uri).containsExactly(
                    URI.create("http://10.0.0.1:8082"), URI.create("http://10.0.0.2:8082"));
        }
    }

    @Test
    void aWorkerThatAppearsIsRoutedToWithoutRestart() {
        dns.addresses = List.of("10.0.0.1");
        try (WorkerDiscovery d = discovery()) {
            WorkerPool.Lease busy = pool.acquire(); // 10.0.0.1 now has one leg in flight
            dns.addresses = List.of("10.0.0.1", "10.0.0.2");
            WorkerPool.Membership change = d.refresh();

            assertThat(change.added()).containsExactly("decode:10.0.0.2:8082");
            assertThat(change.removed()).isEmpty();
            try (WorkerPool.Lease next = pool.acquire()) {
                assertThat(next.instance().name()).isEqualTo("decode:10.0.0.2:8082"); // least outstanding
            }
            busy.close();
        }
    }

    @Test
    void aWorkerThatLeavesGetsNoNewLegsAndItsLegsInFlightFinish() {
        dns.addresses = List.of("10.0.0.1", "10.0.0.2");
        try (WorkerDiscovery d = discovery()) {
            List<WorkerPool.Lease> inFlight = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                inFlight.add(pool.acquire());
            }
            WorkerInstance leaving = pool.instances().get(1);
            assertThat(leaving.outstanding()).isEqualTo(2);

            dns.addresses = List.of("10.0.0.1");
            assertThat(d.refresh().removed()).containsExactly("decode:10.0.0.2:8082");

            for (int i = 0; i < 20; i++) {
                try (WorkerPool.Lease lease = pool.acquire()) {
                    assertThat(lease.instance()).isNotSameAs(leaving);
                }
            }
            assertThat(leaving.routed()).isEqualTo(2);
            // The legs that were on it keep their leases: they report and release as usual.
            for (WorkerPool.Lease lease : inFlight) {
                lease.admitted();
                lease.close();
            }
            assertThat(leaving.outstanding()).isZero();
            assertThat(leaving.bulkhead().getMetrics().getAvailableConcurrentCalls())
                    .isEqualTo(ResilienceProperties.defaults().bulkhead().maxConcurrentRequests());
            assertThat(leaving.circuitBreaker().getMetrics().getNumberOfSuccessfulCalls()).isEqualTo(2);
        }
    }

    @Test
    void aBreakerKeepsItsStateAcrossRefreshesAndAbsences() {
        dns.addresses = List.of("10.0.0.1", "10.0.0.2");
        try (WorkerDiscovery d = discovery()) {
            WorkerInstance first = pool.instances().get(0);
            first.circuitBreaker().transitionToOpenState();

            d.refresh(); // same answer
            assertThat(pool.instances().get(0)).isSameAs(first);

            dns.addresses = List.of("10.0.0.2");
            d.refresh();
            dns.addresses = List.of("10.0.0.2", "10.0.0.1");
            d.refresh(); // back again: the same breaker, still open
            WorkerInstance back = pool.instances().stream().filter(i -> i.name().equals(first.name())).findFirst()
                    .orElseThrow();
            assertThat(back.circuitBreaker().getState()).isEqualTo(CircuitBreaker.State.OPEN);
            for (int i = 0; i < 10; i++) {
                try (WorkerPool.Lease lease = pool.acquire()) {
                    assertThat(lease.instance().name()).isEqualTo("decode:10.0.0.2:8082");
                }
            }
        }
    }

    @Test
    void aFailedLookupKeepsTheLastAnswerAndANameNeverResolvedGivesNoWorker() {
        dns.addresses = null;
        try (WorkerDiscovery d = discovery()) {
            assertThat(pool.instances()).isEmpty();
            assertThatThrownBy(pool::acquire).isInstanceOf(NoWorkerAvailableException.class);

            dns.addresses = List.of("10.0.0.1");
            d.refresh();
            dns.addresses = null;
            d.refresh();
            assertThat(names()).containsExactly("decode:10.0.0.1:8082");
        }
    }

    @Test
    void aDrainingWorkerIsSkippedAtOnceAndUsedAgainWhenItComesBack() {
        dns.addresses = List.of("10.0.0.1", "10.0.0.2");
        try (WorkerDiscovery d = discovery()) {
            WorkerInstance draining = pool.instances().get(0);
            WorkerPool.Lease inFlight = pool.acquire(List.of(), List.of(pool.instances().get(1)));
            assertThat(inFlight.instance()).isSameAs(draining);
            draining.markDraining();

            for (int i = 0; i < 10; i++) {
                try (WorkerPool.Lease lease = pool.acquire()) {
                    assertThat(lease.instance()).isNotSameAs(draining);
                }
            }
            assertThatThrownBy(() -> pool.acquire(List.of(), List.of(pool.instances().get(1))))
                    .isInstanceOf(NoWorkerAvailableException.class)
                    .satisfies(e -> assertThat(((NoWorkerAvailableException) e).draining()).isEqualTo(1));
            inFlight.close();
            assertThat(draining.outstanding()).isZero();

            dns.addresses = List.of("10.0.0.2"); // readiness dropped: out of DNS
            d.refresh();
            dns.addresses = List.of("10.0.0.1", "10.0.0.2"); // a new pod at the address
            d.refresh();
            WorkerInstance back = pool.instances().get(0);
            assertThat(back.name()).isEqualTo(draining.name());
            assertThat(back.draining()).isFalse();
            assertThat(back.circuitBreaker()).isSameAs(draining.circuitBreaker()); // one breaker per pod address
            try (WorkerPool.Lease lease = pool.acquire(List.of(), List.of(pool.instances().get(1)))) {
                assertThat(lease.instance()).isSameAs(back);
            }
        }
    }

    @Test
    void aDrainMarkExpiresSoAStaticWorkerRestartedAtItsAddressIsUsedAgain() {
        java.util.concurrent.atomic.AtomicLong now = new java.util.concurrent.atomic.AtomicLong(1_000_000);
        java.time.Clock clock = new java.time.Clock() {
            @Override
            public java.time.ZoneId getZone() {
                return java.time.ZoneOffset.UTC;
            }

            @Override
            public java.time.Clock withZone(java.time.ZoneId zone) {
                return this;
            }

            @Override
            public java.time.Instant instant() {
                return java.time.Instant.ofEpochMilli(now.get());
            }
        };
        WorkerPool fixed = new WorkerPool("prefill", List.of(URI.create("http://localhost:8081")),
                new WorkerResilience(ResilienceProperties.defaults(), clock));
        WorkerInstance only = fixed.instances().getFirst();
        only.markDraining();

        now.addAndGet(WorkerInstance.DRAIN_MARK.toMillis() - 1);
        assertThat(only.draining()).isTrue();
        assertThatThrownBy(fixed::acquire).isInstanceOf(NoWorkerAvailableException.class);

        now.addAndGet(1);
        assertThat(only.draining()).isFalse();
        try (WorkerPool.Lease lease = fixed.acquire()) {
            assertThat(lease.instance()).isSameAs(only);
        }
    }

    @Test
    void aFileListsWorkersAndIsReadAgainOnEveryRefresh(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("decode-workers");
        Files.writeString(file, "# the local stack's decode workers\nhttp://127.0.0.1:18082\n");
        try (WorkerDiscovery d = new WorkerDiscovery(pool, List.of(file.toUri()), dns, Duration.ZERO)) {
            assertThat(names()).containsExactly("decode:127.0.0.1:18082");
            Files.writeString(file, "http://127.0.0.1:18082\nhttp://127.0.0.1:18092\n" + HEADLESS + "\n");
            dns.addresses = List.of("10.0.0.9");
            d.refresh();
            assertThat(names()).containsExactly("decode:127.0.0.1:18082", "decode:127.0.0.1:18092",
                    "decode:10.0.0.9:8082");
        }
    }

    @Test
    void staticEntriesAreUsedAsWritten() {
        try (WorkerDiscovery d = new WorkerDiscovery(pool, List.of(URI.create("http://localhost:8082")), dns,
                Duration.ofSeconds(5))) {
            assertThat(names()).containsExactly("decode:localhost:8082");
            assertThat(dns.asked).isEmpty();
        }
    }
}
