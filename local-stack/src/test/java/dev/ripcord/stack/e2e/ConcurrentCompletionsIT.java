package dev.ripcord.stack.e2e;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.ripcord.engine.SamplingParams;
import dev.ripcord.stack.GatewayClient;
import dev.ripcord.stack.GatewayClient.Answer;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.ReferenceEngine.Generation;
import dev.ripcord.stack.TestStack;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Timeout;
import tools.jackson.databind.node.ObjectNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Eight requests at once, each exact: prefill interleaves or queues them, decode batches them and lets them join
 * and leave the batch at different steps (their prompts and lengths differ), and none may see another's KV pages,
 * tokens or sampling state.
 */
@LocalStackTest
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a hang guard (a stream that never ends), not a time assertion
class ConcurrentCompletionsIT {

    private static final int REQUESTS = 8;

    @RepeatedTest(2)
    void eightConcurrentCompletionsEachEqualTheirReference(TestStack stack) throws Exception {
        List<String> prompts = new ArrayList<>();
        List<Integer> maxTokens = new ArrayList<>();
        List<Generation> expected = new ArrayList<>();
        for (int i = 0; i < REQUESTS; i++) {
            String prompt = i + ": " + Prompts.ofBytes(3 + 19 * i);
            int max = 12 + 7 * i;
            prompts.add(prompt);
            maxTokens.add(max);
            expected.add(stack.reference().generate(prompt, max, true, SamplingParams.greedy()));
        }
        CountDownLatch ready = new CountDownLatch(REQUESTS);
        List<Future<Answer>> answers = new ArrayList<>();
        try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < REQUESTS; i++) {
                int n = i;
                answers.add(clients.submit(() -> {
                    ObjectNode body = GatewayClient.completionRequest(stack.modelName(), prompts.get(n),
                            maxTokens.get(n));
                    if (n % 2 == 0) {
                        body.put("stream", true);
                        body.putObject("stream_options").put("include_usage", true);
                    }
                    ready.countDown();
                    ready.await(); // all eight go out together
                    return stack.gateway().send(GatewayClient.COMPLETIONS, body, null);
                }));
            }
        }
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < REQUESTS; i++) {
            Answer answer = answers.get(i).get();
            assertThat(answer.text()).as("request %d", i).isEqualTo(expected.get(i).text());
            assertThat(answer.completionTokens()).as("request %d", i).isEqualTo(maxTokens.get(i));
            assertThat(answer.finishReason()).as("request %d", i).isEqualTo("length");
            ids.add(answer.headerRequestId());
        }
        assertThat(ids).as("every request got its own id").hasSize(REQUESTS);
    }
}
