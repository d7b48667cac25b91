package dev.ripcord.stack.cancel;

import java.util.UUID;

import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import org.junit.jupiter.api.Test;

import static dev.ripcord.stack.cancel.CancelStacks.AUTO_BACKEND;
import static dev.ripcord.stack.cancel.CancelStacks.BOTH;
import static dev.ripcord.stack.cancel.CancelStacks.CHUNK_64;
import static dev.ripcord.stack.cancel.CancelStacks.ONE_RUNNING;
import static dev.ripcord.stack.cancel.CancelStacks.SMALL_MODEL;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A cancel that arrives before its request is kept and aborts the request at admission, exactly once per worker
 * (the bug report: "if cancellation arrives before registration, retain it and dispatch exactly one abort after
 * registration"). Here the cancel is the gateway's explicit cancel for an ID it has not seen, which it forwards on
 * the cancellations topic; {@code KafkaUnavailableIT} publishes one with a plain Kafka producer.
 */
@LocalStackTest(properties = {SMALL_MODEL, CHUNK_64, ONE_RUNNING, BOTH, AUTO_BACKEND})
class CancelBeforeRegistrationIT {

    @Test
    void cancelForwardedBeforeTheRequestArrivesAbortsItAtAdmissionExactlyOnce(TestStack stack) throws Exception {
        StreamingClient client = new StreamingClient(stack.url(Role.GATEWAY));
        CancelBeforeRegistration.assertAbortedAtAdmissionExactlyOnce(Endpoints.of(stack),
                "early-cancel-" + UUID.randomUUID(),
                id -> assertThat(client.cancel(id)).as("not in flight here: forwarded on Kafka").isEqualTo(202));
    }
}
