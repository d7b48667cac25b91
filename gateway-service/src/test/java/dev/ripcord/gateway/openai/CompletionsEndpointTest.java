package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokens;
import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.unfinished;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;

import dev.ripcord.gateway.generation.ByteTextCodec;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.protocol.RequestIds;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import tools.jackson.databind.JsonNode;

class CompletionsEndpointTest extends OpenAiEndpointTest {

    @Test
    void streamedCompletionSendsTextCompletionChunksThenFinishThenDone() {
        generator.replay(tokensThenEos("Hi!"));

        WebTestClient.ResponseSpec response = post("/v1/completions",
                """
                {"model":"ripcord-small","prompt":"Say hi","max_tokens":10,"stream":true}""");

        response.expectStatus().isOk().expectHeader().contentTypeCompatibleWith(MediaType.TEXT_EVENT_STREAM);
        String body = raw(response);
        List<JsonNode> chunks = chunks(body);
        assertThat(chunks).hasSize(4); // "H", "i", "!", finish
        String id = chunks.getFirst().get("id").stringValue();
        assertThat(id).matches("req-[A-Za-z0-9]{24}");
        for (JsonNode chunk : chunks) {
            assertThat(chunk.propertyNames()).containsExactly("id", "object", "created", "model", "choices");
            assertThat(chunk.get("id").stringValue()).isEqualTo(id);
            assertThat(chunk.get("object").stringValue()).isEqualTo("text_completion");
            assertThat(chunk.get("created").longValue()).isEqualTo(OpenAiTestContext.CREATED);
            assertThat(chunk.get("model").stringValue()).isEqualTo("ripcord-small");
            JsonNode choice = chunk.get("choices").get(0);
            assertThat(choice.propertyNames()).containsExactly("text", "index", "logprobs", "finish_reason");
            assertThat(choice.get("index").intValue()).isZero();
            assertThat(choice.get("logprobs").isNull()).isTrue();
        }
        assertThat(chunks.subList(0, 3)).allSatisfy(chunk ->
                assertThat(chunk.get("choices").get(0).get("finish_reason").isNull()).isTrue());
        assertThat(completionText(chunks)).isEqualTo("Hi!");
        JsonNode last = chunks.getLast().get("choices").get(0);
        assertThat(last.get("text").stringValue()).isEmpty();
        assertThat(last.get("finish_reason").stringValue()).isEqualTo("stop");
        assertThat(response.expectHeader().valueEquals(RequestIds.HEADER, id));
    }

    @Test
    void includeUsageAddsUsageChunkWithEmptyChoicesBeforeDone() {
        generator.replay(tokens("abcd", GeneratedToken.LENGTH));

        String body = raw(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"12345","max_tokens":4,"stream":true,
                 "stream_options":{"include_usage":true,"continuous_usage_stats":false}}"""));

        List<JsonNode> chunks = chunks(body);
        JsonNode usageChunk = chunks.getLast();
        assertThat(usageChunk.get("choices").isEmpty()).isTrue();
        assertThat(usageChunk.get("usage").get("prompt_tokens").intValue()).isEqualTo(5);
        assertThat(usageChunk.get("usage").get("completion_tokens").intValue()).isEqualTo(4);
        assertThat(usageChunk.get("usage").get("total_tokens").intValue()).isEqualTo(9);
        assertThat(chunks.subList(0, chunks.size() - 1)).allSatisfy(chunk ->
                assertThat(chunk.get("usage").isNull()).as("usage: null on %s", chunk).isTrue());
        assertThat(chunks.get(chunks.size() - 2).get("choices").get(0).get("finish_reason").stringValue())
                .isEqualTo("length");
    }

    @Test
    void theUsageSaysHowManyPromptTokensThePrefixCacheServedStreamedOrNot() {
        generator.replay(tokens("ab", GeneratedToken.LENGTH));
        generator.cachedPromptTokens(3);

        JsonNode usageChunk = chunks(raw(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"12345","max_tokens":2,"stream":true,
                 "stream_options":{"include_usage":true}}"""))).getLast();
        JsonNode body = json(raw(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"12345","max_tokens":2}""")));

        assertThat(usageChunk.at("/usage/prompt_tokens_details/cached_tokens").intValue()).isEqualTo(3);
        assertThat(body.at("/usage/prompt_tokens_details/cached_tokens").intValue()).isEqualTo(3);
        assertThat(body.at("/usage/prompt_tokens").intValue()).as("cached tokens are prompt tokens").isEqualTo(5);
    }

    @Test
    void nonStreamedCompletionIsOneBodyWithUsage() {
        generator.replay(tokensThenEos("Hello"));

        WebTestClient.ResponseSpec response = post("/v1/completions", """
                {"model":"ripcord-small","prompt":[72,105],"max_tokens":10}""");

        response.expectStatus().isOk().expectHeader().contentType(MediaType.APPLICATION_JSON);
        JsonNode body = json(raw(response));
        assertThat(body.propertyNames()).containsExactly("id", "object", "created", "model", "choices", "usage");
        assertThat(body.get("object").stringValue()).isEqualTo("text_completion");
        JsonNode choice = body.get("choices").get(0);
        assertThat(choice.get("text").stringValue()).isEqualTo("Hello");
        assertThat(choice.get("finish_reason").stringValue()).isEqualTo("stop");
        assertThat(choice.get("logprobs").isNull()).isTrue();
        // EOS counts as a generated token, as in vLLM
        assertThat(body.get("usage").get("prompt_tokens").intValue()).isEqualTo(2);
        assertThat(body.get("usage").get("completion_tokens").intValue()).isEqualTo(6);
        assertThat(body.get("usage").get("total_tokens").intValue()).isEqualTo(8);
        assertThat(body.at("/usage/prompt_tokens_details/cached_tokens").intValue()).as("no cache in the way")
                .isZero();
        assertThat(generator.lastRequest().promptTokens()).containsExactly(72, 105);
    }

    @Test
    void stopStringSplitAcrossTokensEndsTextBeforeItWithFinishReasonStop() {
        // "E" and "N" arrive as separate tokens and must be held back until "D" decides; nothing follows but silence
        generator.replayThenHang(unfinished("Hi ENDx"));

        String body = raw(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p","stream":true,"stop":["END","never"],
                 "stream_options":{"include_usage":true}}"""));

        List<JsonNode> chunks = chunks(body);
        assertThat(completionText(chunks)).isEqualTo("Hi ");
        assertThat(chunks.get(chunks.size() - 2).get("choices").get(0).get("finish_reason").stringValue())
                .isEqualTo("stop");
        assertThat(chunks.getLast().get("usage").get("completion_tokens").intValue()).isEqualTo(6);
        assertThat(generator.cancellations()).as("generation cancelled by the stop string").isEqualTo(1);
    }

    @Test
    void stopStringCancelsTheGenerationOfANonStreamedCompletion() {
        generator.replayThenHang(unfinished("one. two. three"));

        JsonNode body = json(raw(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"count","stop":". t"}""")));

        assertThat(body.get("choices").get(0).get("text").stringValue()).isEqualTo("one");
        assertThat(body.get("choices").get(0).get("finish_reason").stringValue()).isEqualTo("stop");
        assertThat(body.get("usage").get("completion_tokens").intValue()).isEqualTo(6);
        assertThat(generator.cancellations()).isEqualTo(1);
    }

    @Test
    void naturalEndCompletesTheGenerationWithoutCancellingIt() {
        generator.replay(tokensThenEos("done"));

        raw(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p","stop":["zzz"],"stream":true}"""));

        assertThat(generator.completions()).isEqualTo(1);
        assertThat(generator.cancellations()).isZero();
    }

    @Test
    void heldBackTextIsReleasedWhenTheGenerationEndsWithoutAMatch() {
        generator.replay(tokens("abc EN", GeneratedToken.LENGTH));

        String body = raw(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p","stop":"END","stream":true}"""));

        List<JsonNode> chunks = chunks(body);
        assertThat(completionText(chunks)).isEqualTo("abc EN");
        assertThat(chunks.getLast().get("choices").get(0).get("finish_reason").stringValue()).isEqualTo("length");
    }

    @Test
    void multiByteCharactersAreNeverSplitAcrossChunks() {
        generator.replay(tokensThenEos("é€😀"));

        List<JsonNode> chunks = chunks(raw(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p","stream":true}""")));

        assertThat(chunks).hasSize(4);
        assertThat(chunks.subList(0, 3)).extracting(chunk -> chunk.get("choices").get(0).get("text").stringValue())
                .containsExactly("é", "€", "😀");
    }

    @Test
    void serviceUnavailableFromTheGeneratorIs503WithRetryAfter() {
        generator.script(request -> Flux.error(
                ApiException.serviceUnavailable(Duration.ofMillis(2500), "No decode capacity; retry later.")));

        WebTestClient.ResponseSpec response = post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p","stream":true}""");

        response.expectHeader().valueEquals(HttpHeaders.RETRY_AFTER, "3");
        JsonNode error = assertError(response, 503, "server_error", "service_unavailable", null);
        assertThat(error.get("message").stringValue()).isEqualTo("No decode capacity; retry later.");
    }

    @Test
    void unexpectedGeneratorFailureIs500WithoutInternals() {
        generator.script(request -> Flux.error(
                new IllegalStateException("decode-7.internal:8082 refused")));

        WebTestClient.ResponseSpec response = post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p"}""");

        JsonNode error = assertError(response, 500, "server_error", "internal_error", null);
        assertThat(error.get("message").stringValue()).doesNotContain("decode-7").containsPattern("req-[A-Za-z0-9]{24}");
    }

    @Test
    void failureAfterTheStreamStartedEndsItWithAnErrorEventAndDone() {
        generator.replayThenFail(unfinished("ab"), new IllegalStateException("decode worker died"));

        WebTestClient.ResponseSpec response = post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p","stream":true}""");

        response.expectStatus().isOk();
        List<JsonNode> chunks = chunks(raw(response));
        assertThat(completionText(chunks.subList(0, 2))).isEqualTo("ab");
        JsonNode error = chunks.getLast().get("error");
        assertThat(error.get("type").stringValue()).isEqualTo("server_error");
        assertThat(error.get("code").stringValue()).isEqualTo("internal_error");
        assertThat(error.get("message").stringValue()).doesNotContain("decode worker died");
    }

    @Test
    void generatorEndingWithoutFinishReasonIsAContractViolationReportedAs500() {
        generator.replay(unfinished("ab"));

        assertError(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p"}"""), 500, "server_error", "internal_error", null);
    }

    @Test
    void clientRequestIdIsHonouredInHeaderBodyAndReactorContext() {
        generator.replay(tokensThenEos("ok"));

        WebTestClient.ResponseSpec response = client.post().uri("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON).header(RequestIds.HEADER, "client-42.a:b_c")
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}").exchange();

        response.expectStatus().isOk().expectHeader().valueEquals(RequestIds.HEADER, "client-42.a:b_c");
        assertThat(json(raw(response)).get("id").stringValue()).isEqualTo("client-42.a:b_c");
        assertThat(generator.lastRequest().requestId()).isEqualTo("client-42.a:b_c");
        assertThat(generator.contextRequestIds()).containsExactly("client-42.a:b_c");
    }

    @Test
    void missingRequestIdIsGeneratedAndReturned() {
        generator.replay(tokensThenEos("ok"));

        WebTestClient.ResponseSpec response = post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p"}""");

        String header = response.expectStatus().isOk().returnResult(Void.class).getResponseHeaders()
                .getFirst(RequestIds.HEADER);
        assertThat(header).matches("req-[A-Za-z0-9]{24}");
        assertThat(generator.lastRequest().requestId()).isEqualTo(header);
    }

    @Test
    void invalidRequestIdIs400WithAFreshIdInTheHeader() {
        WebTestClient.ResponseSpec response = client.post().uri("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON).header(RequestIds.HEADER, "has space/and slash")
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}").exchange();

        assertInvalid(response, "invalid_request_id", "X-Request-Id");
        response.expectHeader().value(RequestIds.HEADER, id -> assertThat(id).matches("req-[A-Za-z0-9]{24}"));
        assertThat(generator.requests()).isEmpty();
    }

    @Test
    void tooLongRequestIdIsRejected() {
        assertInvalid(client.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .header(RequestIds.HEADER, "a".repeat(129))
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}").exchange(),
                "invalid_request_id", "X-Request-Id");
    }

    @Test
    void samplingFieldsAndDeadlineReachTheGenerator() {
        generator.replay(tokensThenEos("ok"));

        client.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .header(RequestParser.TIMEOUT_HEADER, "30")
                .bodyValue("""
                        {"model":"ripcord-small","prompt":"p","max_tokens":7,"temperature":0.5,"top_p":0.9,
                         "seed":-9223372036854775808,"stop":["a","b"],"ignore_eos":true,"user":"u-1","n":1,
                         "timeout":2.5,"logprobs":null,"echo":false,"presence_penalty":0,"frequency_penalty":0.0,
                         "logit_bias":{},"suffix":null,"best_of":1}""")
                .exchange().expectStatus().isOk();

        GenerationRequest request = generator.lastRequest();
        assertThat(request.maxTokens()).isEqualTo(7);
        assertThat(request.temperature()).isEqualTo(0.5);
        assertThat(request.topP()).isEqualTo(0.9);
        assertThat(request.seed()).hasValue(Long.MIN_VALUE);
        assertThat(request.stop()).containsExactly("a", "b");
        assertThat(request.ignoreEos()).isTrue();
        assertThat(request.user()).isEqualTo("u-1");
        assertThat(request.timeout()).as("the shorter of field and header").isEqualTo(Duration.ofMillis(2500));
        assertThat(request.kind()).isEqualTo(GenerationRequest.Kind.COMPLETION);
        assertThat(request.stream()).isFalse();
    }

    @Test
    void defaultsAreOpenAisSixteenTokensCutToTheRoomLeftInTheContext() {
        generator.replay(tokensThenEos("ok"));
        post("/v1/completions", """
                {"model":"ripcord-small","prompt":"%s"}""".formatted("x".repeat(ByteTextCodec.CONTEXT_LENGTH - 10)))
                .expectStatus().isOk();
        assertThat(generator.lastRequest().maxTokens()).isEqualTo(10);
        generator.replay(tokensThenEos("ok"));

        post("/v1/completions", """
                {"model":"ripcord-small","prompt":"%s"}""".formatted("x".repeat(200))).expectStatus().isOk();

        GenerationRequest request = generator.lastRequest();
        assertThat(request.maxTokens()).isEqualTo(16);
        assertThat(request.temperature()).isEqualTo(1.0);
        assertThat(request.topP()).isEqualTo(1.0);
        assertThat(request.seed()).isEmpty();
        assertThat(request.timeout()).isNull();
        assertThat(request.stop()).isEmpty();
    }

    @Test
    void timeoutHeaderAloneSetsTheDeadline() {
        generator.replay(tokensThenEos("ok"));

        client.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .header(RequestParser.TIMEOUT_HEADER, "0.25")
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}").exchange().expectStatus().isOk();

        assertThat(generator.lastRequest().timeout()).isEqualTo(Duration.ofMillis(250));
    }

    @Test
    void promptAsArrayOfOneStringIsAccepted() {
        generator.replay(tokensThenEos("ok"));

        post("/v1/completions", """
                {"model":"ripcord-small","prompt":["hey"]}""").expectStatus().isOk();

        assertThat(ByteTextCodec.decode(generator.lastRequest().promptTokens())).isEqualTo("hey");
    }

    @Test
    void clientGoingAwayCancelsTheGeneration() {
        generator.replayThenHang(unfinished("abc"));

        Flux<String> events = client.post().uri("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true}")
                .exchange().expectStatus().isOk()
                .returnResult(String.class).getResponseBody();

        StepVerifier.create(events)
                .expectNextCount(1)
                .thenCancel()
                .verify(Duration.ofSeconds(5));
        await().atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(generator.cancellations()).isEqualTo(1));
    }
}
