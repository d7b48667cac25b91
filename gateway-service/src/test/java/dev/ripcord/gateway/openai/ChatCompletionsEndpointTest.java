package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokens;
import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import dev.ripcord.gateway.generation.ByteTextCodec;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import tools.jackson.databind.JsonNode;

class ChatCompletionsEndpointTest extends OpenAiEndpointTest {

    @Test
    void streamedChatSendsRoleFirstThenContentThenEmptyDeltaWithFinishReason() {
        generator.replay(tokensThenEos("Yo"));

        WebTestClient.ResponseSpec response = post("/v1/chat/completions", """
                {"model":"ripcord-small","messages":[{"role":"user","content":"hi"}],"stream":true}""");

        response.expectStatus().isOk().expectHeader().contentTypeCompatibleWith(MediaType.TEXT_EVENT_STREAM);
        List<JsonNode> chunks = chunks(raw(response));
        assertThat(chunks).hasSize(4);
        String id = chunks.getFirst().get("id").stringValue();
        assertThat(id).matches("req-[A-Za-z0-9]{24}");
        for (JsonNode chunk : chunks) {
            assertThat(chunk.propertyNames()).containsExactly("id", "object", "created", "model", "choices");
            assertThat(chunk.get("id").stringValue()).isEqualTo(id);
            assertThat(chunk.get("object").stringValue()).isEqualTo("chat.completion.chunk");
            assertThat(chunk.get("created").longValue()).isEqualTo(OpenAiTestContext.CREATED);
            assertThat(chunk.get("choices").get(0).propertyNames())
                    .containsExactly("index", "delta", "logprobs", "finish_reason");
        }
        assertThat(delta(chunks.get(0)).toString()).isEqualTo("{\"role\":\"assistant\",\"content\":\"\"}");
        assertThat(delta(chunks.get(1)).toString()).isEqualTo("{\"content\":\"Y\"}");
        assertThat(delta(chunks.get(2)).toString()).isEqualTo("{\"content\":\"o\"}");
        assertThat(delta(chunks.get(3)).isEmpty()).isTrue();
        assertThat(chunks.get(3).get("choices").get(0).get("finish_reason").stringValue()).isEqualTo("stop");
        assertThat(chunks.subList(0, 3)).allSatisfy(chunk ->
                assertThat(chunk.get("choices").get(0).get("finish_reason").isNull()).isTrue());
    }

    @Test
    void streamedChatWithUsageEndsWithUsageChunk() {
        generator.replay(tokens("ab", GeneratedToken.LENGTH));

        List<JsonNode> chunks = chunks(raw(post("/v1/chat/completions", """
                {"model":"ripcord-small","messages":[{"role":"user","content":"hi"}],"stream":true,
                 "max_completion_tokens":2,"stream_options":{"include_usage":true}}""")));

        JsonNode usage = chunks.getLast();
        assertThat(usage.get("object").stringValue()).isEqualTo("chat.completion.chunk");
        assertThat(usage.get("choices").isEmpty()).isTrue();
        assertThat(usage.get("usage").get("completion_tokens").intValue()).isEqualTo(2);
        assertThat(generator.lastRequest().maxTokens()).isEqualTo(2);
        assertThat(generator.lastRequest().includeUsage()).isTrue();
    }

    @Test
    void nonStreamedChatIsOneChatCompletionWithMessageAndUsage() {
        generator.replay(tokensThenEos("Hello there"));

        JsonNode body = json(raw(post("/v1/chat/completions", """
                {"model":"ripcord-small","messages":[{"role":"user","content":"hi"}],"stop":[" there"]}""")));

        assertThat(body.propertyNames()).containsExactly("id", "object", "created", "model", "choices", "usage");
        assertThat(body.get("object").stringValue()).isEqualTo("chat.completion");
        JsonNode choice = body.get("choices").get(0);
        assertThat(choice.propertyNames()).containsExactly("index", "message", "logprobs", "finish_reason");
        assertThat(choice.get("message").toString()).isEqualTo("{\"role\":\"assistant\",\"content\":\"Hello\"}");
        assertThat(choice.get("finish_reason").stringValue()).isEqualTo("stop");
        int promptTokens = generator.lastRequest().promptTokens().length;
        assertThat(body.get("usage").get("prompt_tokens").intValue()).isEqualTo(promptTokens);
        assertThat(body.get("usage").get("completion_tokens").intValue()).isEqualTo("Hello there".length());
    }

    @Test
    void aChatsUsageSaysHowManyPromptTokensThePrefixCacheServedStreamedOrNot() {
        generator.replay(tokensThenEos("ok"));
        generator.cachedPromptTokens(64);

        JsonNode body = json(raw(post("/v1/chat/completions", """
                {"model":"ripcord-small","messages":[{"role":"user","content":"hi"}]}""")));
        List<JsonNode> chunks = chunks(raw(post("/v1/chat/completions", """
                {"model":"ripcord-small","messages":[{"role":"user","content":"hi"}],"stream":true,
                 "stream_options":{"include_usage":true}}""")));

        assertThat(body.at("/usage/prompt_tokens_details/cached_tokens").intValue()).isEqualTo(64);
        assertThat(chunks.getLast().at("/usage/prompt_tokens_details/cached_tokens").intValue()).isEqualTo(64);
    }

    @Test
    void messagesAreRenderedWithTheChatMlTemplate() {
        generator.replay(tokensThenEos("ok"));

        post("/v1/chat/completions", """
                {"model":"ripcord-small","messages":[
                  {"role":"system","content":"Be terse."},
                  {"role":"user","name":"ann","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]},
                  {"role":"assistant","content":"ok"},
                  {"role":"user","content":"é?"}]}""").expectStatus().isOk();

        assertThat(ByteTextCodec.decode(generator.lastRequest().promptTokens())).isEqualTo("""
                <|im_start|>system
                Be terse.<|im_end|>
                <|im_start|>user
                one
                two<|im_end|>
                <|im_start|>assistant
                ok<|im_end|>
                <|im_start|>user
                é?<|im_end|>
                <|im_start|>assistant
                """);
        assertThat(generator.lastRequest().kind()).isEqualTo(GenerationRequest.Kind.CHAT);
    }

    @Test
    void chatAcceptsItsHarmlessFields() {
        generator.replay(tokensThenEos("ok"));

        post("/v1/chat/completions", """
                {"model":"ripcord-small","messages":[{"role":"user","content":"hi"}],"logprobs":false,
                 "response_format":{"type":"text"},"parallel_tool_calls":true,"metadata":{"k":"v"},"store":false,
                 "max_tokens":5,"max_completion_tokens":5}""").expectStatus().isOk();

        assertThat(generator.lastRequest().maxTokens()).isEqualTo(5);
    }

    private static JsonNode delta(JsonNode chunk) {
        return chunk.get("choices").get(0).get("delta");
    }
}
