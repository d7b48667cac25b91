package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.gateway.generation.ByteTextCodec;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.WorkerUnavailableException;
import dev.ripcord.protocol.Logprobs;
import org.junit.jupiter.api.Test;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;
import tools.jackson.databind.JsonNode;

/**
 * The response side of the optional OpenAI request fields, in-process with a scripted generator: logprobs in both endpoints'
 * shapes (whole and streamed), stop token ids hidden from the text, {@code n} choices with their indexes and summed
 * usage, and {@code continuous_usage_stats}.
 */
class ResponseFieldsEndpointTest extends OpenAiEndpointTest {

    /** "hi" then EOS, each with logprobs and two alternatives ('a' and 'b'). */
    private static List<GeneratedToken> hiWithLogprobs() {
        return List.of(
                new GeneratedToken(0, 'h', null, new Logprobs(-0.5f, new int[] {'h', 'a'}, new float[] {-0.5f, -1.5f})),
                new GeneratedToken(1, 'i', null, new Logprobs(-2f, new int[] {'a', 'b'}, new float[] {-0.25f, -1f})),
                new GeneratedToken(2, ByteTextCodec.EOS, GeneratedToken.STOP,
                        new Logprobs(-0.125f, new int[] {ByteTextCodec.EOS, 'a'}, new float[] {-0.125f, -3f})));
    }

    @Test
    void completionLogprobsHaveTheLegacyShapeAndListTheSampledToken() {
        generator.replay(hiWithLogprobs());

        JsonNode body = json(raw(post("/v1/completions",
                "{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"logprobs\":2}").expectStatus().isOk()));

        JsonNode logprobs = body.path("choices").path(0).path("logprobs");
        assertThat(logprobs.propertyNames()).containsExactly("tokens", "token_logprobs", "top_logprobs",
                "text_offset");
        assertThat(logprobs.path("tokens").get(0).asString()).isEqualTo("h");
        assertThat(logprobs.path("tokens").get(1).asString()).isEqualTo("i");
        assertThat(logprobs.path("token_logprobs").get(1).asDouble()).isEqualTo(-2.0);
        JsonNode second = logprobs.path("top_logprobs").get(1);
        assertThat(second.path("a").asDouble()).isEqualTo(-0.25);
        assertThat(second.path("b").asDouble()).isEqualTo(-1.0);
        assertThat(second.path("i").asDouble()).as("the sampled token is always listed").isEqualTo(-2.0);
        assertThat(logprobs.path("top_logprobs").get(0).size()).as("sampled among the top: listed once").isEqualTo(2);
        assertThat(logprobs.path("text_offset").get(0).asInt()).isZero();
        assertThat(logprobs.path("text_offset").get(1).asInt()).isEqualTo(1);
        assertThat(logprobs.path("tokens").size()).as("EOS too").isEqualTo(3);
    }

    @Test
    void chatLogprobsHaveTheChatShapeAndStreamedChunksCarryTheirTokens() {
        generator.replay(hiWithLogprobs());
        String request = "{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                + "\"logprobs\":true,\"top_logprobs\":2%s}";

        JsonNode whole = json(raw(post("/v1/chat/completions", request.formatted("")).expectStatus().isOk()))
                .path("choices").path(0).path("logprobs").path("content");
        generator.replay(hiWithLogprobs());
        List<JsonNode> chunks = chunks(raw(post("/v1/chat/completions", request.formatted(",\"stream\":true"))
                .expectStatus().isOk()));

        assertThat(whole.size()).isEqualTo(3);
        JsonNode h = whole.get(0);
        assertThat(h.propertyNames()).containsExactly("token", "logprob", "bytes", "top_logprobs");
        assertThat(h.path("token").asString()).isEqualTo("h");
        assertThat(h.path("bytes").get(0).asInt()).isEqualTo('h');
        assertThat(h.path("top_logprobs").get(1).path("token").asString()).isEqualTo("a");
        assertThat(h.path("top_logprobs").get(1).path("logprob").asDouble()).isEqualTo(-1.5);
        List<JsonNode> streamed = new ArrayList<>();
        for (JsonNode chunk : chunks) {
            JsonNode logprobs = chunk.path("choices").path(0).path("logprobs");
            if (!logprobs.isNull()) {
                logprobs.path("content").forEach(streamed::add);
            }
        }
        assertThat(streamed).hasSize(3);
        for (int i = 0; i < 3; i++) {
            assertThat(streamed.get(i)).isEqualTo(whole.get(i));
        }
    }

    @Test
    void withoutLogprobsTheFieldStaysNull() {
        generator.replay(hiWithLogprobs());

        JsonNode body = json(raw(post("/v1/completions", "{\"model\":\"ripcord-small\",\"prompt\":\"p\"}")
                .expectStatus().isOk()));

        assertThat(body.path("choices").path(0).path("logprobs").isNull()).isTrue();
    }

    @Test
    void aStopTokenIdEndsAsStopAndItsTextIsNotShown() {
        generator.replay(List.of(new GeneratedToken(0, 'o', null), new GeneratedToken(1, 'k', null),
                new GeneratedToken(2, '.', GeneratedToken.STOP)));

        JsonNode body = json(raw(post("/v1/completions",
                "{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stop_token_ids\":[46]}").expectStatus().isOk()));

        assertThat(body.path("choices").path(0).path("text").asString()).isEqualTo("ok");
        assertThat(body.path("choices").path(0).path("finish_reason").asString()).isEqualTo("stop");
        assertThat(body.path("usage").path("completion_tokens").asInt()).isEqualTo(3);
        assertThat(generator.lastRequest().sampling().stopTokenIds()).containsExactly(46);
    }

    @Test
    void nChoicesComeWithTheirIndexesAndTheUsageIsTheirSum() {
        generator.replay(ScriptedTokenGenerator.tokensThenEos("ok"));

        JsonNode body = json(raw(post("/v1/chat/completions",
                "{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":3}")
                .expectStatus().isOk()));

        assertThat(body.path("choices").size()).isEqualTo(3);
        for (int i = 0; i < 3; i++) {
            assertThat(body.path("choices").get(i).path("index").asInt()).isEqualTo(i);
            assertThat(body.path("choices").get(i).path("message").path("content").asString()).isEqualTo("ok");
        }
        assertThat(body.path("usage").path("completion_tokens").asInt()).isEqualTo(9);
        assertThat(generator.subscriptions()).isEqualTo(3);
    }

    @Test
    void streamedChoicesEachGetTheirRoleChunkAndOneFinishChunk() {
        generator.replay(ScriptedTokenGenerator.tokensThenEos("ok"));

        List<JsonNode> chunks = chunks(raw(post("/v1/chat/completions",
                "{\"model\":\"ripcord-small\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"n\":2,"
                        + "\"stream\":true,\"stream_options\":{\"include_usage\":true}}").expectStatus().isOk()));

        int[] roles = new int[2];
        int[] finishes = new int[2];
        StringBuilder[] texts = {new StringBuilder(), new StringBuilder()};
        for (JsonNode chunk : chunks) {
            for (JsonNode choice : chunk.path("choices")) {
                int index = choice.path("index").asInt();
                if (choice.path("delta").has("role")) {
                    roles[index]++;
                }
                texts[index].append(choice.path("delta").path("content").asString(""));
                if (!choice.path("finish_reason").isNull()) {
                    finishes[index]++;
                }
            }
        }
        assertThat(roles).containsExactly(1, 1);
        assertThat(finishes).containsExactly(1, 1);
        assertThat(texts[0].toString()).isEqualTo("ok");
        assertThat(texts[1].toString()).isEqualTo("ok");
        assertThat(chunks.getLast().path("usage").path("completion_tokens").asInt()).isEqualTo(6);
    }

    @Test
    void aChoiceThatFailsEndsTheAnswerWithItsErrorAndStopsTheOthersStreamedAndNot() {
        for (boolean stream : List.of(false, true)) {
            generator.reset();
            // Choices 0 and 1 send a token, then wait forever; choice 2 is refused, as a worker at capacity does.
            AtomicInteger choice = new AtomicInteger();
            generator.script(request -> choice.getAndIncrement() == 2
                    ? Flux.<GeneratedToken>error(new WorkerUnavailableException(
                            "the decode workers are at capacity; retry after 1 s", Duration.ofSeconds(1), null))
                            .delaySubscription(Duration.ofMillis(50))
                    : Flux.concat(Flux.fromIterable(ScriptedTokenGenerator.tokens("a", null)), Flux.never()));

            WebTestClient.ResponseSpec response = post("/v1/completions",
                    "{\"model\":\"ripcord-small\",\"prompt\":\"x\",\"max_tokens\":5,\"n\":3,\"stream\":%s}"
                            .formatted(stream));

            if (stream) {
                // The first tokens went out before the refusal: the stream ends with the error event.
                List<String> payloads = ssePayloads(raw(response.expectStatus().isOk()));
                JsonNode error = json(payloads.get(payloads.size() - 2)).path("error");
                assertThat(error.path("code").asString()).isEqualTo("service_unavailable");
                assertThat(error.path("message").asString()).contains("decode workers are at capacity");
            } else {
                JsonNode error = json(raw(response.expectStatus().isEqualTo(503))).path("error");
                assertThat(error.path("code").asString()).isEqualTo("service_unavailable");
            }
            assertThat(generator.subscriptions()).isEqualTo(3);
            assertThat(generator.cancellations()).as("the two waiting choices are stopped").isEqualTo(2);
        }
    }

    @Test
    void continuousUsageStatsPutTheUsageSoFarOnEveryChunk() {
        generator.replay(ScriptedTokenGenerator.tokensThenEos("abc"));

        List<JsonNode> chunks = chunks(raw(post("/v1/completions",
                "{\"model\":\"ripcord-small\",\"prompt\":\"pp\",\"stream\":true,"
                        + "\"stream_options\":{\"continuous_usage_stats\":true}}").expectStatus().isOk()));

        assertThat(chunks).allSatisfy(chunk -> assertThat(chunk.path("usage").path("prompt_tokens").asInt())
                .isEqualTo(2));
        assertThat(chunks.stream().map(c -> c.path("usage").path("completion_tokens").asInt()).toList())
                .containsExactly(1, 2, 3, 4);
    }
}
