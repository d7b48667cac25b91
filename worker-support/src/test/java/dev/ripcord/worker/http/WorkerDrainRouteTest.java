package dev.ripcord.worker.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.protocol.Failed;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.worker.DrainSwitch;
import dev.ripcord.worker.WorkerContext;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/** The drain route: readiness drops once, and from then on a job is refused at the edge, before its scheduler. */
class WorkerDrainRouteTest {

    private final AtomicInteger accepted = new AtomicInteger();
    private final List<Object> published = new CopyOnWriteArrayList<>();

    private final class CountingEndpoint extends WorkerEndpoint<String> {
        CountingEndpoint() {
            super("decode", InternalApi.DECODE, Duration.ofSeconds(2), null, String.class);
        }

        @Override
        protected @Nullable String invalid(String body) {
            return null;
        }

        @Override
        protected Mono<ServerResponse> accept(String body, WorkerRoutes routes) {
            accepted.incrementAndGet();
            return ServerResponse.ok().bodyValue("admitted");
        }
    }

    @Test
    void afterADrainRequestNewJobsGet503DrainingWithoutReachingTheSchedulerAndReadinessDropsOnce() {
        DrainSwitch drain = new DrainSwitch(published::add);
        WorkerContext context = new WorkerContext(null, null, null, new CancellationRegistry(), null, null, null);
        WorkerRoutes routes = new WorkerRoutes(context, new CancelProperties(
                CancelPropagation.IN_BAND, false, "ripcord.cancellations", "ripcord.cancellations.dlt", 3, 1,
                Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10), Duration.ofMinutes(10), 100_000, false,
                Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200), "drain-route-test"), Duration.ofSeconds(2), drain);
        WebTestClient client = WebTestClient.bindToRouterFunction(routes.router(new CountingEndpoint())).build();

        client.post().uri(InternalApi.DECODE).bodyValue("job-1").exchange().expectStatus().isOk();
        assertThat(accepted).hasValue(1);

        client.post().uri(InternalApi.DRAIN).exchange().expectStatus().isOk()
                .expectBody().jsonPath("$.draining").isEqualTo(true).jsonPath("$.liveRegistrations").isEqualTo(0);
        client.get().uri(InternalApi.DRAIN).exchange().expectStatus().isOk(); // the preStop httpGet form; idempotent

        client.post().uri(InternalApi.DECODE).bodyValue("job-2").exchange()
                .expectStatus().isEqualTo(503)
                .expectHeader().valueEquals("Retry-After", "2")
                .expectBody().jsonPath("$.code").isEqualTo(Failed.DRAINING);
        assertThat(accepted).as("the refused job never reached the endpoint's scheduler").hasValue(1);
        assertThat(drain.draining()).isTrue();
        assertThat(published).hasSize(1).first().isInstanceOfSatisfying(AvailabilityChangeEvent.class,
                e -> assertThat(e.getState()).isEqualTo(ReadinessState.REFUSING_TRAFFIC));
    }
}
