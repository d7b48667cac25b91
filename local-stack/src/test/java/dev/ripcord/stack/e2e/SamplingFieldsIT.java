package dev.ripcord.stack.e2e;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.TokenLogprobs;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.stack.GatewayClient;
import dev.ripcord.stack.GatewayClient.Answer;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.ReferenceEngine.Generation;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.cancel.Prometheus;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The optional OpenAI request fields through the whole P/D stack (gateway, prefill and decode in their own JVMs, the KV cache
 * moved between them), on the shared test stack: each sampling knob gives exactly what one engine in one process
 * gives with the same parameters (so the knob reached both the prefill worker, which samples the first token, and
 * the decode worker, which samples the rest, and the penalties' history survived the split); stop token ids end the
 * generation where the engine generates them; logprobs come back equal to the engine's, in both endpoints' shapes,
 * streamed and not; {@code n} choices each follow their own seed; and the smaller fields (developer role,
 * continuous usage, user, the default {@code max_tokens}, unknown fields) behave as docs/openai.md says.
 */
@LocalStackTest
@Timeout(value = 3, unit = TimeUnit.MINUTES) // a hang guard (a stream that never ends), not a time assertion
class SamplingFieldsIT {

    private static final int MAX_TOKENS = 40;
    private static final long SEED = 4242L;
    private static final SamplingParams SAMPLED = new SamplingParams(0.9f, 1f, SEED);

    static Stream<Arguments> knobs() {
        return Stream.of(
                knob("top_k", body -> body.put("top_k", 5), SAMPLED.withTopK(5)),
                knob("min_p", body -> body.put("min_p", 0.2), SAMPLED.withMinP(0.2f)),
                knob("repetition_penalty", body -> body.put("repetition_penalty", 1.8),
                        SAMPLED.withPenalties(1.8f, 0f, 0f)),
                knob("presence_penalty", body -> body.put("presence_penalty", 1.5),
                        SAMPLED.withPenalties(1f, 1.5f, 0f)),
                knob("frequency_penalty", body -> body.put("frequency_penalty", -0.7),
                        SAMPLED.withPenalties(1f, 0f, -0.7f)),
                knob("logit_bias", body -> body.putObject("logit_bias").put("101", 3.5).put("32", -100),
                        SAMPLED.withLogitBias(Map.of(101, 3.5f, 32, -100f))),
                knob("all together, with top_p", body -> {
                    body.put("top_p", 0.9).put("top_k", 20).put("min_p", 0.02).put("repetition_penalty", 1.2)
                            .put("presence_penalty", 0.4).put("frequency_penalty", 0.3);
                    body.putObject("logit_bias").put("110", 2);
                }, new SamplingParams(0.9f, 0.9f, SEED).withTopK(20).withMinP(0.02f).withPenalties(1.2f, 0.4f, 0.3f)
                        .withLogitBias(Map.of(110, 2f))),
                knob("greedy with penalties", body -> body.put("temperature", 0).put("repetition_penalty", 1.5)
                        .put("frequency_penalty", 1), SamplingParams.greedy().withPenalties(1.5f, 0f, 1f)));
    }

    private static Arguments knob(String name, java.util.function.Consumer<ObjectNode> fields, SamplingParams params) {
        return Arguments.of(name, fields, params);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("knobs")
    void everySamplingKnobGivesWhatTheSingleProcessEngineGives(String name,
            java.util.function.Consumer<ObjectNode> fields, SamplingParams params, TestStack stack) {
        String prompt = Prompts.ofBytes(37);
        Generation expected = stack.reference().generate(prompt, MAX_TOKENS, true, params);
        ObjectNode body = request(stack, prompt);
        fields.accept(body);

        Answer plain = stack.gateway().send(GatewayClient.COMPLETIONS, body, null);
        body.put("stream", true);
        Answer streamed = stack.gateway().send(GatewayClient.COMPLETIONS, body, null);

        for (Answer answer : List.of(plain, streamed)) {
            assertThat(answer.text()).as(name).isEqualTo(expected.text());
            assertThat(answer.finishReason()).isEqualTo("length");
        }
        assertThat(plain.completionTokens()).isEqualTo(MAX_TOKENS);
    }

    @Test
    void aKnobReallyChangesTheTokens(TestStack stack) {
        // Guards the test above against knobs that change nothing on this model: each must move the text.
        String prompt = Prompts.ofBytes(37);
        String plain = stack.reference().generate(prompt, MAX_TOKENS, true, SAMPLED).text();
        knobs().forEach(arguments -> {
            SamplingParams params = (SamplingParams) arguments.get()[2];
            if (!params.isGreedy()) {
                assertThat(stack.reference().generate(prompt, MAX_TOKENS, true, params).text())
                        .as("%s changes the completion", arguments.get()[0]).isNotEqualTo(plain);
            }
        });
    }

    @Test
    void aStopTokenIdEndsTheGenerationWhereTheEngineGeneratesItAndIsNotShown(TestStack stack) {
        String prompt = Prompts.ofBytes(21);
        Generation free = stack.reference().generate(prompt, MAX_TOKENS, true, SamplingParams.greedy());
        int stopAt = 12;
        int stopToken = free.tokens()[stopAt];
        int first = 0;
        while (free.tokens()[first] != stopToken) {
            first++;
        }
        ObjectNode body = request(stack, prompt).put("temperature", 0).put("ignore_eos", true);
        body.putArray("stop_token_ids").add(stopToken);
        for (boolean stream : List.of(false, true)) {
            body.put("stream", stream);
            if (stream) {
                body.putObject("stream_options").put("include_usage", true);
            }

            Answer answer = stack.gateway().send(GatewayClient.COMPLETIONS, body, null);

            assertThat(answer.finishReason()).isEqualTo("stop");
            assertThat(answer.completionTokens()).as("the stop token counts").isEqualTo(first + 1);
            assertThat(answer.text()).isEqualTo(stack.reference().decode(Arrays.copyOf(free.tokens(), first)));
        }
    }

    @Test
    void completionLogprobsAreTheEnginesInTheLegacyShapeStreamedAndNot(TestStack stack) {
        String prompt = Prompts.ofBytes(30);
        Generation expected = stack.reference().generate(prompt, 12, true, SAMPLED.withLogprobs(3));
        ObjectNode body = request(stack, prompt).put("max_tokens", 12).put("logprobs", 3);

        JsonNode plain = stack.gateway().sendForJson(GatewayClient.COMPLETIONS, body, null).getFirst()
                .path("choices").path(0).path("logprobs");
        body.put("stream", true);
        List<JsonNode> chunks = stack.gateway().sendForJson(GatewayClient.COMPLETIONS, body, null);

        List<Double> streamedValues = new ArrayList<>();
        List<Integer> streamedOffsets = new ArrayList<>();
        for (JsonNode chunk : chunks) {
            JsonNode logprobs = chunk.path("choices").path(0).path("logprobs");
            if (logprobs.isObject()) {
                logprobs.path("token_logprobs").forEach(v -> streamedValues.add(v.asDouble()));
                logprobs.path("text_offset").forEach(v -> streamedOffsets.add(v.asInt()));
            }
        }
        List<Double> values = new ArrayList<>();
        plain.path("token_logprobs").forEach(v -> values.add(v.asDouble()));
        assertThat(values).hasSize(12).isEqualTo(streamedValues);
        for (int i = 0; i < 12; i++) {
            TokenLogprobs engine = expected.logprobs().get(i);
            assertThat(values.get(i).floatValue()).as("token %d", i).isEqualTo(engine.logprob());
            JsonNode top = plain.path("top_logprobs").path(i);
            assertThat(top.size()).as("3 alternatives and the sampled token").isBetween(3, 4);
            List<Float> listed = new ArrayList<>();
            top.properties().forEach(e -> listed.add((float) e.getValue().asDouble()));
            assertThat(listed).contains(engine.topLogprobs()[0], engine.topLogprobs()[1], engine.topLogprobs()[2]);
        }
        assertThat(plain.path("tokens").size()).isEqualTo(12);
        List<Integer> offsets = new ArrayList<>();
        plain.path("text_offset").forEach(v -> offsets.add(v.asInt()));
        assertThat(offsets).first().isEqualTo(0);
        assertThat(offsets).isSorted().isEqualTo(streamedOffsets);
    }

    @Test
    void chatLogprobsAreTheEnginesInTheChatShapeStreamedAndNot(TestStack stack) {
        String message = "Say something about pages.";
        Generation expected = stack.reference().generate(Prompts.chatml(message), 10, true,
                SamplingParams.greedy().withLogprobs(2));
        ObjectNode body = GatewayClient.chatRequest(stack.modelName(), message, 10);
        body.put("temperature", 0).put("logprobs", true).put("top_logprobs", 2);

        JsonNode plain = stack.gateway().sendForJson(GatewayClient.CHAT_COMPLETIONS, body, null).getFirst()
                .path("choices").path(0).path("logprobs").path("content");
        body.put("stream", true);
        List<JsonNode> streamed = new ArrayList<>();
        for (JsonNode chunk : stack.gateway().sendForJson(GatewayClient.CHAT_COMPLETIONS, body, null)) {
            chunk.path("choices").path(0).path("logprobs").path("content").forEach(streamed::add);
        }

        assertThat(plain.size()).isEqualTo(10);
        assertThat(streamed).hasSize(10);
        for (int i = 0; i < 10; i++) {
            JsonNode entry = plain.get(i);
            TokenLogprobs engine = expected.logprobs().get(i);
            assertThat((float) entry.path("logprob").asDouble()).isEqualTo(engine.logprob());
            assertThat(entry.path("top_logprobs").size()).isEqualTo(2);
            assertThat((float) entry.path("top_logprobs").path(0).path("logprob").asDouble())
                    .isEqualTo(engine.topLogprobs()[0]);
            assertThat(entry.path("bytes").isArray()).isTrue();
            assertThat(entry.path("token").isString()).isTrue();
            assertThat(streamed.get(i)).isEqualTo(entry);
        }
    }

    @Test
    void nChoicesEachFollowTheirOwnSeedAndCountInTheUsage(TestStack stack) {
        String prompt = Prompts.ofBytes(25);
        int n = 3;
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            expected.add(stack.reference().generate(prompt, MAX_TOKENS, true,
                    new SamplingParams(1.2f, 1f, Sampling.choiceSeed(SEED, i))).text());
        }
        assertThat(expected).doesNotHaveDuplicates();
        ObjectNode body = request(stack, prompt).put("temperature", 1.2).put("n", n);

        JsonNode plain = stack.gateway().sendForJson(GatewayClient.COMPLETIONS, body, "e2e-n-plain").getFirst();
        body.put("stream", true);
        body.putObject("stream_options").put("include_usage", true);
        List<JsonNode> chunks = stack.gateway().sendForJson(GatewayClient.COMPLETIONS, body, "e2e-n-stream");

        assertThat(plain.path("choices").size()).isEqualTo(n);
        StringBuilder[] streamed = new StringBuilder[n];
        int[] finishes = new int[n];
        for (int i = 0; i < n; i++) {
            streamed[i] = new StringBuilder();
            assertThat(plain.path("choices").path(i).path("index").asInt()).isEqualTo(i);
            assertThat(plain.path("choices").path(i).path("text").asString()).as("choice %d", i)
                    .isEqualTo(expected.get(i));
        }
        assertThat(plain.path("usage").path("completion_tokens").asInt()).isEqualTo(n * MAX_TOKENS);
        for (JsonNode chunk : chunks) {
            assertThat(chunk.path("id").asString()).isEqualTo("e2e-n-stream");
            for (JsonNode choice : chunk.path("choices")) {
                int index = choice.path("index").asInt();
                streamed[index].append(choice.path("text").asString(""));
                if (!choice.path("finish_reason").isNull()) {
                    finishes[index]++;
                }
            }
        }
        for (int i = 0; i < n; i++) {
            assertThat(streamed[i].toString()).isEqualTo(expected.get(i));
            assertThat(finishes[i]).as("one finish chunk per choice").isEqualTo(1);
        }
        assertThat(chunks.getLast().path("usage").path("completion_tokens").asInt()).isEqualTo(n * MAX_TOKENS);
    }

    @Test
    void theDeveloperRoleIsSystem(TestStack stack) {
        ObjectNode developer = GatewayClient.chatRequest(stack.modelName(), "hi", 12).put("temperature", 0);
        ((ArrayNode) developer.get("messages")).insertObject(0).put("role", "developer").put("content", "Be terse.");
        ObjectNode system = developer.deepCopy();
        ((ObjectNode) system.get("messages").get(0)).put("role", "system");
        Generation expected = stack.reference().generate("<|im_start|>system\nBe terse.<|im_end|>\n" + Prompts.chatml("hi"),
                12, true, SamplingParams.greedy());

        Answer asDeveloper = stack.gateway().send(GatewayClient.CHAT_COMPLETIONS, developer, null);
        Answer asSystem = stack.gateway().send(GatewayClient.CHAT_COMPLETIONS, system, null);

        assertThat(asDeveloper.text()).isEqualTo(asSystem.text()).isEqualTo(expected.text());
        assertThat(asDeveloper.promptTokens()).isEqualTo(expected.promptTokens());
    }

    @Test
    void continuousUsageStatsPutTheUsageSoFarOnEveryChunk(TestStack stack) {
        ObjectNode body = request(stack, Prompts.ofBytes(10)).put("max_tokens", 8).put("stream", true);
        body.putObject("stream_options").put("continuous_usage_stats", true);

        List<JsonNode> chunks = stack.gateway().sendForJson(GatewayClient.COMPLETIONS, body, null);

        assertThat(chunks).isNotEmpty().allSatisfy(chunk -> assertThat(chunk.path("usage").isObject()).isTrue());
        List<Integer> completion = chunks.stream().map(c -> c.path("usage").path("completion_tokens").asInt()).toList();
        assertThat(completion).isSorted();
        assertThat(completion.getLast()).isEqualTo(8);
        assertThat(chunks.getLast().path("usage").path("prompt_tokens").asInt()).isEqualTo(11);
    }

    @Test
    void completionsDefaultToSixteenTokensAndUnknownFieldsAreA400NamingThem(TestStack stack) {
        ObjectNode body = GatewayClient.completionRequest(stack.modelName(), Prompts.ofBytes(10), 1);
        body.remove("max_tokens");
        body.put("temperature", 0);

        Answer answer = stack.gateway().send(GatewayClient.COMPLETIONS, body, null);

        assertThat(answer.completionTokens()).isEqualTo(16);
        assertThat(answer.finishReason()).isEqualTo("length");
        body.put("guided_choice", 1);
        try {
            stack.gateway().send(GatewayClient.COMPLETIONS, body, null);
            throw new IllegalStateException("an unknown field was accepted");
        } catch (AssertionError refused) {
            assertThat(refused.getMessage()).contains("answered 400", "unknown_parameter", "guided_choice");
        }
    }

    @Test
    void theUserIsCountedInItsHashedGroup(TestStack stack) {
        double before = Prometheus.scrape(stack.url(Role.GATEWAY)).sum("ripcord_gateway_user_requests_total");
        ObjectNode body = request(stack, Prompts.ofBytes(10)).put("max_tokens", 2).put("user", "alice@example");

        stack.gateway().send(GatewayClient.COMPLETIONS, body, null);

        Prometheus after = Prometheus.scrape(stack.url(Role.GATEWAY));
        assertThat(after.sum("ripcord_gateway_user_requests_total")).isGreaterThan(before);
        assertThat(after.samples("ripcord_gateway_user_requests_total"))
                .allSatisfy(s -> assertThat(s.labels().get("user_group")).matches("u[0-9]{2}|none"));
    }

    private static ObjectNode request(TestStack stack, String prompt) {
        return GatewayClient.completionRequest(stack.modelName(), prompt, MAX_TOKENS).put("temperature", 0.9)
                .put("seed", SEED);
    }
}
