package dev.ripcord.stack.e2e;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.cancel.Prometheus;
import dev.ripcord.stack.GatewayClient;
import dev.ripcord.stack.GatewayClient.Answer;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import tools.jackson.databind.node.ObjectNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * After every request has ended, the workers hold nothing on its behalf: no KV page, no transfer session, no
 * cancellation registration; only the page pool's own transfer region. And the work done is exactly the work
 * asked for: one prefill chunk per 16 prompt tokens, no aborts.
 */
@LocalStackTest
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a hang guard (a stream that never ends), not a time assertion
class WorkersReleaseEverythingIT {

    private static final int CHUNK_TOKENS = 16;

    @Test
    void workersHoldNothingAfterStreamedPlainAndConcurrentRequests(TestStack stack) throws Exception {
        stack.awaitWorkersIdle(); // a clean start, whatever ran before on this shared stack
        WorkerStatus prefillBefore = stack.workers().status(Role.PREFILL);
        WorkerStatus decodeBefore = stack.workers().status(Role.DECODE);
        double hitsBefore = Prometheus.scrape(stack.url(Role.PREFILL)).sum("ripcord_prefix_cache_hits_total");
        int[] promptBytes = {5, 40, 150, 1, 64, 95};
        long expectedChunks = 0;
        List<Future<Answer>> answers = new ArrayList<>();
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < promptBytes.length; i++) {
                int tokens = promptBytes[i] + 1; // BOS
                expectedChunks += (tokens + CHUNK_TOKENS - 1) / CHUNK_TOKENS;
                ObjectNode body = GatewayClient.completionRequest(stack.modelName(), Prompts.ofBytes(promptBytes[i]),
                        10 + i);
                body.put("stream", i % 2 == 0);
                answers.add(clients.submit(() -> stack.gateway().send(GatewayClient.COMPLETIONS, body, null)));
            }
        }
        for (Future<Answer> answer : answers) {
            assertThat(answer.get().finishReason()).isEqualTo("length");
        }

        stack.awaitWorkersIdle();

        WorkerStatus prefill = stack.workers().status(Role.PREFILL);
        WorkerStatus decode = stack.workers().status(Role.DECODE);
        // A prompt that starts from cached pages (these prompts share their text with each other and with earlier
        // requests on this shared stack) computes only the rest: a chunk of 16 tokens fewer per 16-token page taken
        // from the prefix cache, since its chunks start where the cached prefix ends.
        long hits = Math.round(Prometheus.scrape(stack.url(Role.PREFILL)).sum("ripcord_prefix_cache_hits_total")
                - hitsBefore);
        assertThat(hits % CHUNK_TOKENS).as("prefix-cache hits come in whole 16-token pages").isZero();
        assertThat(prefill.chunksComputed() - prefillBefore.chunksComputed())
                .as("prefill chunks of %d tokens (%d prompt tokens from the prefix cache)", CHUNK_TOKENS, hits)
                .isEqualTo(expectedChunks - hits / CHUNK_TOKENS);
        assertThat(prefill.aborts()).as("prefill aborts").isEqualTo(prefillBefore.aborts());
        assertThat(decode.aborts()).as("decode aborts").isEqualTo(decodeBefore.aborts());
    }
}
