package dev.ripcord.stack.cancel;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import static dev.ripcord.stack.cancel.CancelStacks.AUTO_BACKEND;
import static dev.ripcord.stack.cancel.CancelStacks.BOTH;
import static dev.ripcord.stack.cancel.CancelStacks.CHUNK_64;
import static dev.ripcord.stack.cancel.CancelStacks.OCCUPYING_PROMPT_BYTES;
import static dev.ripcord.stack.cancel.CancelStacks.ONE_RUNNING;
import static dev.ripcord.stack.cancel.CancelStacks.SMALL_MODEL;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A cancel in each phase of a request's life stops exactly the work of that phase, through the phase's own exit:
 * queued (removed from the prefill queue, never started), mid-prefill (stopped at the next safe point inside the chunk), during
 * the KV transfer (decode aborts its receive session before any KV lands), during decode (leaves the batch at the
 * next step, or inside the step when it had no other sequence; the bug report's control case). Each phase is reached by observing the journal or the stream, never by
 * waiting a time.
 */
@LocalStackTest(properties = {SMALL_MODEL, CHUNK_64, ONE_RUNNING, BOTH, AUTO_BACKEND})
class CancelPhasesIT {

    private Endpoints stack;
    private StreamingClient client;
    private long prefillMark;
    private long decodeMark;
    private WorkerStatus prefillBefore;
    private WorkerStatus decodeBefore;
    private Prometheus prefillMetricsBefore;
    private Prometheus decodeMetricsBefore;

    @BeforeEach
    void markJournals(TestStack testStack) {
        stack = Endpoints.of(testStack);
        stack.awaitWorkersIdle();
        client = new StreamingClient(stack.gateway());
        prefillMark = Journal.mark(stack.prefill());
        decodeMark = Journal.mark(stack.decode());
        prefillBefore = stack.status(Role.PREFILL);
        decodeBefore = stack.status(Role.DECODE);
        prefillMetricsBefore = Prometheus.scrape(stack.prefill());
        decodeMetricsBefore = Prometheus.scrape(stack.decode());
    }

    @Test
    void queuedRequestCancelledExplicitlyLeavesTheQueueWithoutStarting() throws Exception {
        String longId = id("queued-long");
        String queuedId = id("queued");
        Call longCall = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(OCCUPYING_PROMPT_BYTES), 1,
                true), longId);
        DisconnectScenario.awaitChunk(stack, prefillMark, longId, 0, longCall);
        Call queued = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(30), 8, false), queuedId);
        awaitPrefillEvent(queuedId, "QUEUED");

        assertThat(client.cancel(queuedId)).as("cancelled where it is in flight").isEqualTo(200);
        Outcome outcome = queued.outcome().get(1, TimeUnit.MINUTES);
        longCall.disconnect();
        stack.awaitWorkersIdle();

        assertThat(outcome.aborted()).as("the caller gets what was produced: nothing, finish_reason abort, %s", outcome)
                .isTrue();
        assertThat(outcome.text()).isEmpty();
        assertThat(outcome.completionTokens()).isZero();
        Journal p = prefillJournal();
        Journal d = decodeJournal();
        // In-band, a worker sees only its stream close, so it records CLIENT_DISCONNECT whatever the client's
        // reason; the Kafka copy carries CLIENT_CANCEL. Either may arrive first.
        assertThat(p.of(queuedId)).as(p.toString()).extracting(e -> e.event())
                .containsExactly("QUEUED", "CANCEL_OBSERVED", "REMOVED_FROM_QUEUE");
        assertThat(d.has(queuedId, "KV_LANDED")).isFalse();
        assertThat(d.seq(queuedId, "CANCEL_OBSERVED")).isGreaterThan(d.seq(queuedId, "RESERVED"));
        assertThat(d.count(queuedId, "FREED")).isEqualTo(1);
        assertThat(p.count(longId, "STOPPED")).as("the long one is stopped by its own disconnect").isEqualTo(1);

        assertThat(delta(Role.PREFILL)).as("prefill aborts: the queued one and the long one").isEqualTo(2);
        assertThat(delta(Role.DECODE)).as("decode aborts: both, while awaiting KV").isEqualTo(2);
        assertThat(metricDelta(Role.PREFILL, "ripcord_cancellations_total", "phase", "queued")).isEqualTo(1);
        assertThat(metricDelta(Role.PREFILL, "ripcord_cancellations_total", "phase", "prefill")).isEqualTo(1);
    }

    /**
     * A cancel while a chunk computes stops it at the next safe point, at or inside a layer (the
     * journal says which), nothing of the stopped chunk is ever sent (the KV bytes both workers moved cover only the chunks that
     * completed), and nothing is held afterwards. The chunks are back to back, so an explicit cancel lands inside one
     * all but always; one that lands in the instant between two (stopped at the check point instead, which the
     * same assertions cover) is retried, at most twice.
     */
    @Test
    void explicitCancelMidPrefillStopsAtTheNextLayerBoundaryAndSendsNothingOfTheStoppedChunk() throws Exception {
        boolean stoppedInsideAChunk = false;
        List<String> attempts = new ArrayList<>();
        for (int attempt = 0; attempt < 3 && !stoppedInsideAChunk; attempt++) {
            stoppedInsideAChunk = cancelMidPrefill(id("mid-prefill"), attempts);
        }
        assertThat(stoppedInsideAChunk).as("a cancel landed inside a chunk in one of %s", attempts).isTrue();
    }

    /** One mid-prefill cancel, asserted; returns whether it stopped inside a chunk (at a layer boundary). */
    private boolean cancelMidPrefill(String longId, List<String> attempts) throws Exception {
        stack.awaitWorkersIdle();
        long mark = Journal.mark(stack.prefill());
        long aborts = stack.status(Role.PREFILL).aborts();
        long decodeAborts = stack.status(Role.DECODE).aborts();
        Prometheus prefillBefore = Prometheus.scrape(stack.prefill());
        Prometheus decodeBefore = Prometheus.scrape(stack.decode());
        Call call = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(OCCUPYING_PROMPT_BYTES), 1,
                true), longId);
        DisconnectScenario.awaitChunk(stack, mark, longId, 2, call);

        assertThat(client.cancel(longId)).isEqualTo(200);
        Outcome outcome = call.outcome().get(1, TimeUnit.MINUTES);
        stack.awaitWorkersIdle();

        assertThat(outcome.aborted()).as("no token before the cancel: a stream of one abort chunk, %s", outcome)
                .isTrue();
        assertThat(outcome.sawDone()).isTrue();
        assertThat(outcome.text()).isEmpty();
        Journal p = Journal.since(stack.prefill(), mark);
        long observed = p.seq(longId, "CANCEL_OBSERVED");
        // Decode's typed abort of the transfer for the same cancel (UPSTREAM) may reach prefill first.
        assertThat(cancelDetail(p, longId)).containsAnyOf("via IN_BAND", "via KAFKA", "via UPSTREAM");
        assertThat(p.count(longId, "STOPPED")).isEqualTo(1);
        assertThat(p.seq(longId, "FREED")).as("pages freed after the stop").isGreaterThan(p.seq(longId, "STOPPED"));
        assertThat(p.has(longId, "DONE")).isFalse();
        assertThat(stack.status(Role.PREFILL).aborts() - aborts).isEqualTo(1);
        assertThat(stack.status(Role.DECODE).aborts() - decodeAborts).isEqualTo(1);

        long chunksDone = p.count(longId, "CHUNK");
        java.util.Optional<int[]> stoppedAt = p.layer(longId, "STOPPED");
        attempts.add(p.events(longId).toString());
        if (stoppedAt.isPresent()) {
            int layer = stoppedAt.get()[0];
            int layers = stoppedAt.get()[1];
            assertThat(layer).as("a layer boundary of the chunk: %s", p.events(longId)).isBetween(0, layers);
            assertThat(p.chunk(longId, "STOPPED")).as("the stopped chunk is the one after the last CHUNK")
                    .isEqualTo(chunksDone);
            assertThat(p.chunksAfter(longId, observed)).as("no chunk completed after the cancel\n" + p).isZero();
            // Where the cancel found the forward (when it found one): the stop is at that boundary or after it.
            p.layer(longId, "CANCEL_OBSERVED").ifPresent(found -> assertThat(layer)
                    .as("stopped no earlier than where the cancel found the forward").isGreaterThanOrEqualTo(found[0]));
        } else {
            assertThat(p.chunksAfter(longId, observed)).as(p.toString()).isLessThanOrEqualTo(1);
        }
        // Nothing of the stopped chunk was sent: the KV moved covers only the full pages of the prefix the prompt
        // started from (its cached tokens, sent with its first chunk) and of the chunks that completed after it.
        Prometheus.Sample config = Prometheus.scrape(stack.prefill()).samples("ripcord_cache_config_info").getFirst();
        int pageTokens = Integer.parseInt(config.labels().get("block_size"));
        double pageBytes = prefillBefore.sum("ripcord_kv_cache_capacity_bytes")
                / Double.parseDouble(config.labels().get("num_gpu_blocks"));
        int cached = p.cachedTokens(longId);
        double completedChunkBytes = (cached + chunksDone * CancelStacks.CHUNK_TOKENS) / pageTokens * pageBytes;
        double sent = Prometheus.scrape(stack.prefill()).sum("ripcord_kv_bytes_total", "direction", "sent")
                - prefillBefore.sum("ripcord_kv_bytes_total", "direction", "sent");
        double received = Prometheus.scrape(stack.decode()).sum("ripcord_kv_bytes_total", "direction", "received")
                - decodeBefore.sum("ripcord_kv_bytes_total", "direction", "received");
        // Both sides' counts, each against the completed chunks: prefill's "sent" counts what decode acknowledged,
        // decode's "received" what landed in its region. A write that lands just as the cancel aborts the session is
        // received, but its acknowledgement finds the sender's session gone, so received may exceed sent by the
        // writes in flight at the abort; neither may exceed the completed chunks' pages.
        assertThat(sent).as("bytes prefill sent, %d chunks completed: %s", chunksDone, p.events(longId))
                .isLessThanOrEqualTo(completedChunkBytes);
        assertThat(received).as("bytes decode received, %d chunks completed: %s", chunksDone, p.events(longId))
                .isLessThanOrEqualTo(completedChunkBytes);
        return stoppedAt.isPresent();
    }

    @Test
    void disconnectDuringKvTransferAbortsTheReceiveBeforeAnyKvLands() throws Exception {
        String longId = id("kv-transfer");
        // A non-streaming client: it waits for the whole answer, and simply goes away.
        Call call = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(OCCUPYING_PROMPT_BYTES), 1,
                false), longId);
        // Three chunks of 64 tokens: six pages of 32 tokens have been pushed into decode's receive region.
        DisconnectScenario.awaitChunk(stack, prefillMark, longId, 2, call);

        call.disconnect();
        Awaitility.await().atMost(Duration.ofMinutes(1)).until(() -> decodeJournal().has(longId, "FREED"));
        stack.awaitWorkersIdle();

        Journal d = decodeJournal();
        Journal p = prefillJournal();
        long observed = d.seq(longId, "CANCEL_OBSERVED");
        assertThat(observed).isGreaterThan(d.seq(longId, "RESERVED"));
        assertThat(d.has(longId, "KV_LANDED")).as("no KV lands after the abort\n" + d).isFalse();
        // The session ends aborted, by whichever side learned of the disconnect first: decode's own cancel aborts
        // it after CANCEL_OBSERVED; prefill's abort of the transfer fails it first (KV_FAILED), and that failure is
        // how decode observes the cancel (CANCEL_OBSERVED via UPSTREAM, just after). Either way, after RESERVED.
        assertThat(d.seq(longId, "KV_FAILED")).as("the receive session ends aborted\n" + d)
                .isGreaterThan(d.seq(longId, "RESERVED"));
        assertThat(d.count(longId, "FREED")).as("pages freed once, after the session is released").isEqualTo(1);
        assertThat(d.seq(longId, "FREED")).isGreaterThan(observed).isGreaterThan(d.seq(longId, "KV_FAILED"));
        assertThat(p.count(longId, "CHUNK")).as("pages were in flight").isGreaterThanOrEqualTo(3);
        assertThat(p.count(longId, "STOPPED")).isEqualTo(1);
        assertThat(delta(Role.DECODE)).isEqualTo(1);
        assertThat(metricDelta(Role.DECODE, "ripcord_cancellations_total", "phase", "transfer")).isEqualTo(1);
    }

    /** The bug report's control case: once decode produces output, a disconnect stops it at the next step. */
    @Test
    void disconnectDuringDecodeLeavesTheBatchAtTheNextStep() throws Exception {
        String id = id("decode");
        int maxTokens = 400;
        Call call = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(40, 3), maxTokens, true), id);
        Awaitility.await("first tokens arrive").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(5))
                .until(() -> call.textEvents() >= 3 || call.outcome().isDone());
        assertThat(call.outcome().isDone()).as("still generating when we disconnect").isFalse();

        call.disconnect();
        Awaitility.await().atMost(Duration.ofMinutes(1)).until(() -> decodeJournal().has(id, "FREED"));
        stack.awaitWorkersIdle();

        Journal d = decodeJournal();
        Journal p = prefillJournal();
        assertThat(d.seq(id, "CANCEL_OBSERVED")).isGreaterThan(d.seq(id, "KV_LANDED"));
        assertThat(d.seq(id, "STOPPED")).isGreaterThan(d.seq(id, "CANCEL_OBSERVED"));
        assertThat(d.has(id, "FINISHED")).as(d.toString()).isFalse();
        if (d.layer(id, "STOPPED").isPresent()) {
            // Its step had no other sequence, so the step itself stopped at a layer boundary.
            assertThat(d.step(id, "STOPPED")).as("stopped inside the step it was observed in\n" + d)
                    .isEqualTo(d.step(id, "CANCEL_OBSERVED"));
            assertThat(d.layer(id, "STOPPED").get()[0]).isBetween(0, d.layer(id, "STOPPED").get()[1]);
        } else {
            assertThat(d.step(id, "STOPPED")).as("left the batch at the step after the one it was observed in\n" + d)
                    .isEqualTo(d.step(id, "CANCEL_OBSERVED") + 1);
        }
        int generated = Integer.parseInt(d.of(id).stream().filter(e -> e.event().equals("STOPPED")).findFirst()
                .orElseThrow().detail().split(" ")[0]);
        assertThat(generated).as("tokens generated before the stop").isLessThan(maxTokens);
        assertThat(p.has(id, "DONE")).as("prefill had finished normally").isTrue();
        assertThat(p.has(id, "CANCEL_OBSERVED")).as("a finished prefill is not aborted").isFalse();
        assertThat(delta(Role.PREFILL)).isZero();
        assertThat(delta(Role.DECODE)).isEqualTo(1);
        assertThat(metricDelta(Role.DECODE, "ripcord_cancellations_total", "phase", "decode")).isEqualTo(1);
    }

    /**
     * An explicit cancel during decode answers the original caller with the partial text
     * and its usage ({@code finish_reason: "abort"}), streamed (a final abort chunk, the usage chunk, {@code [DONE]})
     * and not (200 with the partial choice), and the request API records why it ended.
     */
    @Test
    void explicitCancelDuringDecodeAnswersTheCallerWithThePartialTextAndUsageStreamedAndNot() throws Exception {
        int maxTokens = 400;
        String streamedId = id("abort-stream");
        Call streamed = client.start(StreamingClient.withUsage(
                StreamingClient.completion(stack.model(), Texts.ofBytes(40, 3), maxTokens, true)), streamedId);
        Awaitility.await("first tokens arrive").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(5))
                .until(() -> streamed.textEvents() >= 3 || streamed.outcome().isDone());
        assertThat(streamed.outcome().isDone()).as("still generating when we cancel").isFalse();

        assertThat(client.cancel(streamedId)).isEqualTo(200);
        Outcome stream = streamed.outcome().get(1, TimeUnit.MINUTES);

        assertThat(stream.aborted()).as("%s", stream).isTrue();
        assertThat(stream.sawDone()).isTrue();
        assertThat(stream.textEvents()).isGreaterThanOrEqualTo(3);
        assertThat(stream.text()).isNotEmpty();
        assertThat(stream.completionTokens()).as("the usage chunk counts what was generated before the cancel")
                .isGreaterThanOrEqualTo(stream.textEvents()).isLessThan(maxTokens);
        assertEndedAsCancelled(streamedId, stream);

        String plainId = id("abort-plain");
        Call plain = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(40, 3), maxTokens, false),
                plainId);
        Awaitility.await("tokens are generated").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(5))
                .until(() -> plain.outcome().isDone() || tokensSoFar(plainId) >= 3);
        assertThat(plain.outcome().isDone()).as("still generating when we cancel").isFalse();

        assertThat(client.cancel(plainId)).isEqualTo(200);
        Outcome body = plain.outcome().get(1, TimeUnit.MINUTES);

        assertThat(body.aborted()).as("200 with the partial choice, not an error: %s", body).isTrue();
        assertThat(body.text()).isNotEmpty();
        assertThat(body.completionTokens()).isGreaterThanOrEqualTo(3).isLessThan(maxTokens);
        assertEndedAsCancelled(plainId, body);

        stack.awaitWorkersIdle();
        assertThat(delta(Role.DECODE)).as("decode aborted both, once each").isEqualTo(2);
        assertThat(metricDelta(Role.DECODE, "ripcord_cancellations_total", "phase", "decode")).isEqualTo(2);
    }

    private int tokensSoFar(String requestId) {
        JsonNode request = client.request(requestId);
        return request == null ? 0 : request.path("completion_tokens").asInt();
    }

    private void assertEndedAsCancelled(String requestId, Outcome outcome) {
        JsonNode ended = client.request(requestId);
        assertThat(ended).as("the owner still finds %s after it ended", requestId).isNotNull();
        assertThat(ended.path("state").asString()).isEqualTo("cancelled");
        assertThat(ended.path("cancel_reason").asString()).isEqualTo("client_cancel");
        assertThat(ended.path("finish_reason").asString()).isEqualTo("abort");
        assertThat(ended.path("phase").asString()).isEqualTo("decode");
        assertThat(ended.path("completion_tokens").asInt()).as("the gateway's record and the caller's usage agree")
                .isEqualTo(outcome.completionTokens());
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private static String id(String what) {
        return "phase-" + what + "-" + UUID.randomUUID();
    }

    private Journal prefillJournal() {
        return Journal.since(stack.prefill(), prefillMark);
    }

    private Journal decodeJournal() {
        return Journal.since(stack.decode(), decodeMark);
    }

    private void awaitPrefillEvent(String requestId, String event) {
        Awaitility.await("%s %s at prefill".formatted(requestId, event)).atMost(Duration.ofMinutes(1))
                .pollInterval(Duration.ofMillis(5)).until(() -> prefillJournal().has(requestId, event));
    }

    private static String cancelDetail(Journal journal, String requestId) {
        return journal.of(requestId).stream().filter(e -> e.event().equals("CANCEL_OBSERVED")).findFirst()
                .orElseThrow(() -> new AssertionError("no CANCEL_OBSERVED for " + requestId + ": "
                        + journal.events(requestId))).detail();
    }

    private long delta(Role role) {
        WorkerStatus before = role == Role.PREFILL ? prefillBefore : decodeBefore;
        return stack.status(role).aborts() - before.aborts();
    }

    private double metricDelta(Role role, String name, String... labels) {
        Prometheus before = role == Role.PREFILL ? prefillMetricsBefore : decodeMetricsBefore;
        String[] withService = new String[labels.length + 2];
        withService[0] = "service";
        withService[1] = role.shortName();
        System.arraycopy(labels, 0, withService, 2, labels.length);
        return Prometheus.scrape(stack.worker(role)).sum(name, withService) - before.sum(name, withService);
    }
}
