package dev.ripcord.stack.cancel;

import java.net.URI;
import java.time.Duration;

import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestCredentials;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.WorkerClient;
import org.awaitility.Awaitility;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where a stack's services are, whoever started it: a shared {@link TestStack}, or a stack a test owns because it
 * must own its Kafka broker too.
 *
 * @param model the model id the gateway serves
 */
public record Endpoints(URI gateway, URI prefill, URI decode, String model) {

    public static Endpoints of(TestStack stack) {
        return new Endpoints(stack.url(Role.GATEWAY), stack.url(Role.PREFILL), stack.url(Role.DECODE),
                stack.modelName());
    }

    /** The API key of the stack's gateway ({@link TestCredentials}), or null when it runs open. */
    public String apiKey() {
        return TestCredentials.apiKey(gateway);
    }

    /** The internal token of the stack's workers ({@link TestCredentials}). */
    public String internalToken() {
        return TestCredentials.internalToken(prefill);
    }

    public URI worker(Role role) {
        return switch (role) {
            case PREFILL -> prefill;
            case DECODE -> decode;
            case GATEWAY -> throw new IllegalArgumentException("the gateway is not a worker");
        };
    }

    public WorkerStatus status(Role role) {
        return new WorkerClient(prefill, decode).status(role);
    }

    /**
     * Waits until both workers hold nothing: no page, session, registration, queued or running job, and only the
     * page pool's transfer region. The same check as {@link TestStack#awaitWorkersIdle()}, for any stack.
     */
    public void awaitWorkersIdle() {
        WorkerClient workers = new WorkerClient(prefill, decode);
        for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
            Awaitility.await("%s holds nothing".formatted(role.shortName()))
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(50))
                    .untilAsserted(() -> assertIdle(workers.status(role)));
        }
    }

    static void assertIdle(WorkerStatus status) {
        assertThat(status.livePages()).as("%s livePages", status.role()).isZero();
        assertThat(status.liveSessions()).as("%s liveSessions", status.role()).isZero();
        assertThat(status.liveRegistrations()).as("%s liveRegistrations", status.role()).isZero();
        assertThat(status.liveRegions()).as("%s liveRegions (the page pool only)", status.role()).isEqualTo(1);
        assertThat(status.queued()).as("%s queued", status.role()).isZero();
        assertThat(status.running()).as("%s running", status.role()).isZero();
    }
}
