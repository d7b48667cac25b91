package dev.ripcord.stack.e2e;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.stack.GatewayClient;
import dev.ripcord.stack.GatewayClient.Answer;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import tools.jackson.databind.node.ObjectNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One ID follows a request through every service, so that one grep over all logs tells its whole story: the
 * client's {@code X-Request-Id} when it sends one, else the one the gateway makes.
 */
@LocalStackTest
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a hang guard (a stream that never ends), not a time assertion
class RequestIdPropagationIT {

    @Test
    void clientRequestIdAppearsInTheLogsOfAllThreeServices(TestStack stack) {
        String requestId = "e2e-trace-" + UUID.randomUUID();
        ObjectNode body = GatewayClient.completionRequest(stack.modelName(), Prompts.ofBytes(40), 8);

        Answer answer = stack.gateway().send(GatewayClient.COMPLETIONS, body, requestId);

        assertThat(answer.headerRequestId()).isEqualTo(requestId);
        assertThat(answer.ids()).containsExactly(requestId);
        awaitInAllLogs(stack, requestId);
    }

    @Test
    void gatewayMadeRequestIdAppearsInTheLogsOfAllThreeServices(TestStack stack) {
        ObjectNode body = GatewayClient.completionRequest(stack.modelName(), Prompts.ofBytes(17), 8);
        body.put("stream", true);

        Answer answer = stack.gateway().send(GatewayClient.COMPLETIONS, body, null);

        assertThat(answer.headerRequestId()).matches("req-[A-Za-z0-9]{24}");
        assertThat(answer.ids()).containsExactly(answer.headerRequestId());
        awaitInAllLogs(stack, answer.headerRequestId());
    }

    /** Log lines reach the files through a relay thread: await their content, not a time. */
    private static void awaitInAllLogs(TestStack stack, String requestId) {
        for (Role role : Role.values()) {
            Path log = stack.logFile(role);
            Awaitility.await("%s's log mentions %s".formatted(role.shortName(), requestId))
                    .atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> read(log).contains(requestId));
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
