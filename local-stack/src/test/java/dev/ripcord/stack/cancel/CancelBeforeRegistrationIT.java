package dev.ripcord.stack.cancel;

import java.util.UUID;

import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.TestStack;
import org.junit.jupiter.api.Test;

import static dev.ripcord.stack.cancel.CancelStacks.AUTO_BACKEND;
import static dev.ripcord.stack.cancel.CancelStacks.BOTH;
import static dev.ripcord.stack.cancel.CancelStacks.CHUNK_64;
import static dev.ripcord.stack.cancel.CancelStacks.ONE_RUNNING;
import static dev.ripcord.stack.cancel.CancelStacks.SMALL_MODEL;

/**
 * A cancel that arrives before its request is kept and aborts the request at admission, exactly once per worker
 * (the bug report: "if cancellation arrives before registration, retain it and dispatch exactly one abort after
 * registration"). Here the cancel is published on the cancellations topic for the internal ID the request will have;
 * {@code KafkaUnavailableIT} does the same on a stack whose broker it later stops.
 */
@LocalStackTest(properties = {SMALL_MODEL, CHUNK_64, ONE_RUNNING, BOTH, AUTO_BACKEND})
class CancelBeforeRegistrationIT {

    @Test
    void cancelPublishedBeforeTheRequestArrivesAbortsItAtAdmissionExactlyOnce(TestStack stack) throws Exception {
        CancelBeforeRegistration.assertAbortedAtAdmissionExactlyOnce(Endpoints.of(stack),
                "early-cancel-" + UUID.randomUUID(),
                internalId -> CancelBeforeRegistration.publishRaw(stack.bootstrapServers(), internalId));
    }
}
