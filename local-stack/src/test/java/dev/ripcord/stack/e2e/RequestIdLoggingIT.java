package dev.ripcord.stack.e2e;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.Endpoints;
import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import dev.ripcord.stack.cancel.Texts;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every log line that concerns a request carries that request's ID, and no other, in all three
 * services (gateway, prefill and decode), while several requests are in flight at once and end in different ways.
 *
 * <p>The stack is this class's own, with JSON (ECS) logs, so that the MDC's {@code requestId} is a field of each line
 * rather than a guess from a pattern, and it is stopped before the logs are read, so that they are complete: every
 * line each service wrote from its start to its exit (the drain included) is checked, not only a sample.
 *
 * <p><b>The rule.</b> A line <em>concerns</em> request R when R's ID appears anywhere in it outside its
 * {@code requestId} field: in the message, a logger argument or a stack trace. (The IDs are unique random strings, so
 * no ID can appear by chance, and none is a substring of another.) Then:
 * <ol>
 *   <li>a line that concerns R carries R in its {@code requestId} field (not empty, not missing);</li>
 *   <li>a line concerns at most one request: a line that names R and carries or names another request's ID mixes
 *       two requests, which a grep by ID would attribute to the wrong one.</li>
 * </ol>
 * A line that is not JSON (a JVM warning before logging starts) has no MDC: if it names a request, rule 1 fails it.
 * And so that the rule cannot hold vacuously: each of the three services wrote at least one line carrying the ID of
 * each request that reached the workers (the rejected one never does, and the gateway writes no line for a 400).
 *
 * <p>The workers know each request by its internal ID (the client's ID and a random part the gateway added at
 * admission); a worker's line carries that, and counts as carrying the client's ID it was made from.
 *
 * <p>The requests, all at once: completed streams, completed non-streamed answers, streams the client disconnects
 * after their first tokens, streams cancelled through {@code POST /v1/requests/{id}/cancel} after their first tokens
 * (in-band and Kafka paths both on), and one request the gateway rejects (too long for the context) before any
 * worker sees it.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a hang guard (a stream that never ends), not a time assertion
class RequestIdLoggingIT {

    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final String MODEL = "ripcord-small";
    /** Long enough that a cancel after the first tokens always finds the request still decoding. */
    private static final int LONG_MAX_TOKENS = 1000;
    private static final int SHORT_MAX_TOKENS = 8;

    @Test
    void everyLogLineAboutARequestCarriesThatRequestsIdAndNoOtherInAllThreeServices() throws Exception {
        Map<String, String> properties = TestStacks.withDefaults(Map.of(
                "ripcord.engine.preset", "small",
                "ripcord.prefill.chunk-tokens", "64",
                "logging.structured.format.console", "ecs"));
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/e2e-logs/request-id-logging-"
                + ProcessHandle.current().pid());
        String run = UUID.randomUUID().toString().substring(0, 8);
        List<String> completedIds = new ArrayList<>();
        List<String> disconnectedIds = new ArrayList<>();
        List<String> cancelledIds = new ArrayList<>();
        String rejectedId = "rid-" + run + "-rejected-" + UUID.randomUUID();
        Map<Role, Path> logs = new EnumMap<>(Role.class);

        try (LocalStack stack = LocalStack.start(TestStacks.options(properties, logDir), null)) {
            Endpoints endpoints = new Endpoints(URI.create(stack.url(Role.GATEWAY)),
                    URI.create(stack.url(Role.PREFILL)), URI.create(stack.url(Role.DECODE)), MODEL);
            StreamingClient client = new StreamingClient(endpoints.gateway());
            Map<String, Call> calls = new HashMap<>();
            for (int i = 0; i < 3; i++) {
                String id = "rid-" + run + "-streamed-" + i + "-" + UUID.randomUUID();
                completedIds.add(id);
                calls.put(id, client.start(StreamingClient.completion(MODEL, Texts.ofBytes(50 + 30 * i, i),
                        SHORT_MAX_TOKENS, true), id));
            }
            for (int i = 0; i < 2; i++) {
                String id = "rid-" + run + "-plain-" + i + "-" + UUID.randomUUID();
                completedIds.add(id);
                calls.put(id, client.start(StreamingClient.completion(MODEL, Texts.ofBytes(70, 3 + i),
                        SHORT_MAX_TOKENS, false), id));
            }
            for (int i = 0; i < 2; i++) {
                String id = "rid-" + run + "-disconnected-" + i + "-" + UUID.randomUUID();
                disconnectedIds.add(id);
                calls.put(id, client.start(StreamingClient.completion(MODEL, Texts.ofBytes(40, 5 + i),
                        LONG_MAX_TOKENS, true), id));
            }
            for (int i = 0; i < 2; i++) {
                String id = "rid-" + run + "-cancelled-" + i + "-" + UUID.randomUUID();
                cancelledIds.add(id);
                calls.put(id, client.start(StreamingClient.completion(MODEL, Texts.ofBytes(45, 7 + i),
                        LONG_MAX_TOKENS, true), id));
            }
            Outcome rejected = client.start(StreamingClient.completion(MODEL, Texts.ofBytes(40), 1_000_000, true),
                    rejectedId).outcome().get(2, TimeUnit.MINUTES);

            for (String id : disconnectedIds) {
                calls.get(id).textEvents(2).get(2, TimeUnit.MINUTES);
                assertThat(calls.get(id).disconnect()).as("%s was still streaming", id).isTrue();
            }
            for (String id : cancelledIds) {
                calls.get(id).textEvents(2).get(2, TimeUnit.MINUTES);
                assertThat(client.cancel(id)).as("cancel of %s", id).isEqualTo(200);
            }
            for (String id : completedIds) {
                Outcome outcome = calls.get(id).outcome().get(2, TimeUnit.MINUTES);
                assertThat(outcome.completed()).as("%s", outcome).isTrue();
            }
            for (String id : cancelledIds) {
                Outcome outcome = calls.get(id).outcome().get(2, TimeUnit.MINUTES);
                assertThat(outcome.completed()).as("%s", outcome).isFalse();
            }
            assertThat(rejected.status()).as("%s", rejected).isBetween(400, 499);
            endpoints.awaitWorkersIdle();
            for (Role role : Role.values()) {
                logs.put(role, stack.logFile(role));
            }
        } // stopped here: each service's log is complete, its shutdown included

        Set<String> known = new LinkedHashSet<>();
        known.addAll(completedIds);
        known.addAll(disconnectedIds);
        known.addAll(cancelledIds);
        known.add(rejectedId);
        List<String> violations = new ArrayList<>();
        Map<Role, Map<String, Integer>> carried = new EnumMap<>(Role.class);
        for (Role role : Role.values()) {
            Map<String, Integer> counts = new HashMap<>();
            carried.put(role, counts);
            List<String> lines = Files.readAllLines(logs.get(role));
            int json = 0;
            for (String line : lines) {
                Line parsed = Line.parse(line);
                json += parsed.json() ? 1 : 0;
                // The workers' lines carry the request's internal ID: the client's and a random part.
                String lineId = dev.ripcord.stack.cancel.Journal.clientId(parsed.requestId());
                if (known.contains(lineId)) {
                    counts.merge(lineId, 1, Integer::sum);
                }
                Set<String> named = new LinkedHashSet<>();
                for (String id : known) {
                    if (parsed.withoutRequestId().contains(id)) {
                        named.add(id);
                    }
                }
                if (named.isEmpty()) {
                    continue;
                }
                if (parsed.requestId().isEmpty()) {
                    violations.add("%s: names %s without a requestId: %s".formatted(role.shortName(), named, line));
                } else if (!named.equals(Set.of(lineId))) {
                    violations.add("%s: carries requestId %s but names %s: %s".formatted(role.shortName(),
                            parsed.requestId(), named, line));
                }
            }
            System.out.printf("request-id logging: %s wrote %d lines (%d JSON); lines per request: %s%n",
                    role.shortName(), lines.size(), json, counts);
            assertThat(json).as("%s logs JSON (the check reads its requestId field)", role.shortName())
                    .isGreaterThan(lines.size() / 2);
        }

        assertThat(violations).as("log lines about a request without its ID, or with another's").isEmpty();
        for (Role role : Role.values()) {
            // The rejected request is not among them: the gateway answers it 400 without a log line (it is in the
            // known IDs all the same, so any line that names it must carry it).
            List<String> reached = new ArrayList<>(completedIds);
            reached.addAll(disconnectedIds);
            reached.addAll(cancelledIds);
            assertThat(carried.get(role).keySet()).as("requests with at least one %s line carrying their ID",
                    role.shortName()).containsAll(reached);
        }
    }

    /**
     * One log line: its MDC {@code requestId} ("" if none, or if the line is not JSON) and its whole text less that
     * field, where a mention of any request counts.
     */
    private record Line(boolean json, String requestId, String withoutRequestId) {

        static Line parse(String line) {
            if (!line.startsWith("{")) {
                return new Line(false, "", line);
            }
            try {
                JsonNode node = JSON.readTree(line);
                if (!(node instanceof ObjectNode object)) {
                    return new Line(false, "", line);
                }
                JsonNode id = object.remove("requestId");
                return new Line(true, id == null ? "" : id.asString(""), object.toString());
            } catch (JacksonException e) {
                return new Line(false, "", line);
            }
        }
    }
}
