package dev.ripcord.stack.cancel;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.awaitility.Awaitility;

/**
 * The bug report's scenario, run against any stack: a long streaming prompt with {@code max_tokens=1} whose client
 * disconnects once the prefill journal shows the prompt's second chunk (before any output exists), then at once a
 * short request. Everything a test asserts on is collected: both workers' journals from before the scenario, their
 * status and the prefill metrics before and after.
 *
 * <p>"After the second chunk" is observed, not timed: the scenario polls the journal for {@code CHUNK 1}.
 */
final class DisconnectScenario {

    static final int SHORT_PROMPT_BYTES = 40;
    static final int SHORT_MAX_TOKENS = 8;

    private DisconnectScenario() {
    }

    /**
     * What happened.
     *
     * @param disconnectMark the prefill journal's last seq read right after the disconnect: entries above it happened
     *                       after the client was gone
     */
    record Result(String longId, String shortId, Outcome longOutcome, Outcome shortOutcome, long disconnectMark,
                  Journal prefill, Journal decode, WorkerStatus prefillBefore, WorkerStatus prefillAfter,
                  WorkerStatus decodeBefore, WorkerStatus decodeAfter, double chunksAfterCancelMetric) {

        String describe() {
            return "prefill journal:\n" + prefill + "\ndecode journal:\n" + decode;
        }
    }

    static Result run(Endpoints stack, String tag) throws Exception {
        stack.awaitWorkersIdle();
        StreamingClient client = new StreamingClient(stack.gateway());
        String longId = "bug-" + tag + "-long-" + UUID.randomUUID();
        String shortId = "bug-" + tag + "-short-" + UUID.randomUUID();
        long prefillMark = Journal.mark(stack.prefill());
        long decodeMark = Journal.mark(stack.decode());
        WorkerStatus prefillBefore = stack.status(Role.PREFILL);
        WorkerStatus decodeBefore = stack.status(Role.DECODE);
        double chunksAfterCancelBefore = chunksAfterCancel(stack);

        Call longCall = client.start(StreamingClient.completion(stack.model(),
                Texts.ofBytes(CancelStacks.LONG_PROMPT_BYTES), 1, true), longId);
        awaitChunk(stack, prefillMark, longId, 1, longCall);
        longCall.disconnect();
        long disconnectMark = Journal.mark(stack.prefill());

        Call shortCall = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(SHORT_PROMPT_BYTES, 7),
                SHORT_MAX_TOKENS, false), shortId);
        Outcome shortOutcome = shortCall.outcome().get(3, TimeUnit.MINUTES);
        Outcome longOutcome = longCall.outcome().get(1, TimeUnit.MINUTES);

        // The long prompt ends one way or another (STOPPED when a cancel reached it, DONE when none did).
        Awaitility.await("the long prompt's prefill ends").atMost(Duration.ofMinutes(3))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> {
                    Journal j = Journal.since(stack.prefill(), prefillMark);
                    return j.has(longId, "FREED");
                });
        stack.awaitWorkersIdle();
        return new Result(longId, shortId, longOutcome, shortOutcome, disconnectMark,
                Journal.since(stack.prefill(), prefillMark), Journal.since(stack.decode(), decodeMark),
                prefillBefore, stack.status(Role.PREFILL), decodeBefore, stack.status(Role.DECODE),
                chunksAfterCancel(stack) - chunksAfterCancelBefore);
    }

    /** Polls the prefill journal until {@code requestId} has computed chunk {@code index}. */
    static void awaitChunk(Endpoints stack, long mark, String requestId, int index, Call call) {
        Awaitility.await("%s computes chunk %d".formatted(requestId, index))
                .atMost(Duration.ofMinutes(2))
                .pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(5))
                .until(() -> {
                    if (call.outcome().isDone()) {
                        throw new AssertionError("%s ended before its chunk %d: %s".formatted(requestId, index,
                                call.outcome().join()));
                    }
                    return Journal.since(stack.prefill(), mark).of(requestId).stream()
                            .anyMatch(e -> e.event().equals("CHUNK") && Integer.parseInt(e.detail()) >= index);
                });
    }

    static double chunksAfterCancel(Endpoints stack) {
        return Prometheus.scrape(stack.prefill()).sum("ripcord_prefill_chunks_after_cancel_total");
    }
}
