package dev.ripcord.stack.e2e;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.protocol.InternalApi;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.junit.jupiter.api.Test;

/**
 * Authentication, on the shared default stack: a completion needs the stack's API key
 * (401 without or with a wrong one), a worker's internal endpoint needs the internal token (401 without, 403
 * wrong), health stays open, and a key cannot cancel another key's request (404, as for an unknown ID).
 */
@LocalStackTest
class AuthenticationIT {

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    private static HttpResponse<String> send(HttpRequest.Builder request) throws IOException, InterruptedException {
        return HTTP.send(request.timeout(Duration.ofMinutes(1)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpRequest.Builder completion(TestStack stack) {
        return HttpRequest.newBuilder(stack.url(Role.GATEWAY).resolve("/v1/completions"))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"" + stack.modelName()
                        + "\",\"prompt\":\"Hello\",\"max_tokens\":4,\"temperature\":0}"));
    }

    @Test
    void completionsNeedTheStacksApiKey(TestStack stack) throws Exception {
        assertThat(stack.apiKey()).startsWith("rk-");

        HttpResponse<String> none = send(completion(stack));
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(none.body()).contains("\"code\":\"invalid_api_key\"");
        assertThat(none.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));

        HttpResponse<String> wrong = send(completion(stack).header("Authorization", "Bearer " + stack.apiKey() + "x"));
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(wrong.body()).contains("invalid_api_key").doesNotContain(stack.apiKey());

        HttpResponse<String> right = send(completion(stack).header("Authorization", "Bearer " + stack.apiKey()));
        assertThat(right.statusCode()).as(right.body()).isEqualTo(200);
        assertThat(right.body()).contains("\"finish_reason\"");

        HttpResponse<String> health = send(HttpRequest.newBuilder(
                stack.managementUrl(Role.GATEWAY).resolve("/actuator/health")));
        assertThat(health.statusCode()).isEqualTo(200);
        // Metrics name callers' identities: the API port serves no actuator at all.
        assertThat(send(HttpRequest.newBuilder(stack.url(Role.GATEWAY).resolve("/actuator/prometheus"))).statusCode())
                .as("the gateway's API port").isEqualTo(404);
        assertThat(send(HttpRequest.newBuilder(stack.managementUrl(Role.GATEWAY).resolve("/actuator/prometheus")))
                .statusCode()).as("the gateway's management port").isEqualTo(200);
    }

    @Test
    void workerInternalEndpointsNeedTheInternalTokenAndActuatorDoesNot(TestStack stack) throws Exception {
        for (Role worker : new Role[] {Role.PREFILL, Role.DECODE}) {
            URI status = stack.url(worker).resolve(InternalApi.STATUS);
            assertThat(send(HttpRequest.newBuilder(status)).statusCode()).as("%s without a token", worker)
                    .isEqualTo(401);
            assertThat(send(HttpRequest.newBuilder(status)
                    .header(InternalApi.INTERNAL_TOKEN_HEADER, stack.internalToken() + "x")).statusCode())
                    .as("%s with a wrong token", worker).isEqualTo(403);
            assertThat(send(HttpRequest.newBuilder(status)
                    .header(InternalApi.INTERNAL_TOKEN_HEADER, stack.internalToken())).statusCode())
                    .as("%s with the token", worker).isEqualTo(200);
            // The gateway's own API key is no internal credential.
            assertThat(send(HttpRequest.newBuilder(stack.url(worker).resolve(InternalApi.PREFILL))
                    .header("Authorization", "Bearer " + stack.apiKey())
                    .POST(HttpRequest.BodyPublishers.ofString("{}"))).statusCode()).isEqualTo(401);
            assertThat(send(HttpRequest.newBuilder(stack.managementUrl(worker).resolve("/actuator/health/readiness")))
                    .statusCode()).as("%s readiness", worker).isEqualTo(200);
            assertThat(send(HttpRequest.newBuilder(stack.url(worker).resolve("/actuator/prometheus"))).statusCode())
                    .as("%s service port serves no actuator", worker).isIn(401, 404);
        }
    }

    @Test
    void aKeyCannotCancelAnotherKeysRequestButItsOwnerCan(TestStack stack) throws Exception {
        StreamingClient owner = new StreamingClient(stack.url(Role.GATEWAY), stack.apiKey());
        StreamingClient other = new StreamingClient(stack.url(Role.GATEWAY), TestStacks.SECOND_API_KEY);
        // The owner's cancel must find the request still in flight; on the tiny model a completion may finish
        // first, so try again then. The other key's cancel always comes first, so each try checks it.
        boolean cancelledByOwner = false;
        for (int attempt = 0; attempt < 20 && !cancelledByOwner; attempt++) {
            String id = "auth-owned-" + UUID.randomUUID();
            Call call = owner.start(StreamingClient.completion(stack.modelName(), "Hello there", 480, true), id);
            call.firstText().get(1, TimeUnit.MINUTES);
            assertThat(other.cancel(id)).as("another key's cancel").isEqualTo(404);
            int status = owner.cancel(id);
            assertThat(status).as("the owner's cancel: cancelled, or gone already").isIn(200, 404);
            Outcome outcome = call.outcome().get(1, TimeUnit.MINUTES);
            if (status == 200) {
                cancelledByOwner = true;
                assertThat(outcome.aborted()).as("cancelled before the end, answered with finish_reason abort: %s",
                        outcome).isTrue();
                assertThat(outcome.text()).as("what was generated before the cancel").isNotEmpty();
            } else {
                assertThat(outcome.completed()).as("it had finished: %s", outcome).isTrue();
            }
        }
        assertThat(cancelledByOwner).as("the owner cancelled a request in flight").isTrue();
        // The other key is a real key: its own requests are served.
        Outcome own = other.start(StreamingClient.completion(stack.modelName(), "Hi", 4, false),
                "auth-other-" + UUID.randomUUID()).outcome().get(1, TimeUnit.MINUTES);
        assertThat(own.completed()).as("%s", own).isTrue();
        stack.awaitWorkersIdle();
    }
}
