package dev.ripcord.stack.e2e;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.RequestOptions;
import com.openai.core.http.StreamResponse;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.completions.Completion;
import com.openai.models.completions.CompletionChoice;
import com.openai.models.completions.CompletionCreateParams;
import com.openai.models.completions.CompletionUsage;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.ReferenceEngine.Generation;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * OpenAI's own Java SDK, pointed at the gateway, gets exactly the reference text, streamed and not. This is the
 * test that catches a response shape our own client accepts but real clients reject (a missing field, a wrong
 * type, an SSE framing detail). Answers are validated against the SDK's schema, streamed completions excepted.
 */
@LocalStackTest
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a hang guard (a stream that never ends), not a time assertion
class OpenAiSdkIT {

    private static final int MAX_TOKENS = 40;
    private static OpenAIClient client;

    @BeforeAll
    static void connect(TestStack stack) {
        client = OpenAIOkHttpClient.builder()
                .baseUrl(stack.url(Role.GATEWAY).resolve("/v1").toString())
                .apiKey(stack.apiKey())
                .maxRetries(0)
                .timeout(Duration.ofMinutes(2))
                .responseValidation(true)
                .build();
    }

    @AfterAll
    static void disconnect() {
        if (client != null) {
            client.close();
        }
    }

    @Test
    void sdkCompletionEqualsReference(TestStack stack) {
        String prompt = Prompts.ofBytes(70);
        Generation expected = stack.reference().generate(prompt, MAX_TOKENS, true, SamplingParams.greedy());

        Completion completion = client.completions().create(completionParams(stack, prompt, false));

        assertThat(completion.choices()).hasSize(1);
        CompletionChoice choice = completion.choices().getFirst();
        assertThat(choice.text()).isEqualTo(expected.text());
        assertThat(choice.finishReason()).isEqualTo(CompletionChoice.FinishReason.LENGTH);
        CompletionUsage usage = completion.usage().orElseThrow();
        assertThat(usage.completionTokens()).isEqualTo(MAX_TOKENS);
        assertThat(usage.promptTokens()).isEqualTo(expected.promptTokens());
    }

    @Test
    void sdkStreamedCompletionEqualsReference(TestStack stack) {
        String prompt = Prompts.ofBytes(70);
        Generation expected = stack.reference().generate(prompt, MAX_TOKENS, true, SamplingParams.greedy());
        StringBuilder text = new StringBuilder();
        List<String> finishReasons = new ArrayList<>();
        long completionTokens = -1;

        // Not validated: the SDK reuses its Completion model for stream chunks, whose schema makes finish_reason
        // required, yet every chunk but the last has "finish_reason": null, on OpenAI's own API too.
        try (StreamResponse<Completion> stream = client.completions().createStreaming(
                completionParams(stack, prompt, true), RequestOptions.builder().responseValidation(false).build())) {
            for (Completion chunk : stream.stream().toList()) {
                for (CompletionChoice choice : chunk.choices()) {
                    text.append(choice.text());
                    choice._finishReason().asKnown().ifPresent(f -> finishReasons.add(f.asString()));
                }
                if (chunk.usage().isPresent()) {
                    completionTokens = chunk.usage().get().completionTokens();
                }
            }
        }

        assertThat(text.toString()).isEqualTo(expected.text());
        assertThat(finishReasons).containsExactly("length");
        assertThat(completionTokens).isEqualTo(MAX_TOKENS);
    }

    @Test
    void sdkChatCompletionEqualsReference(TestStack stack) {
        String message = "What is disaggregated serving?";
        Generation expected = stack.reference().generate(Prompts.chatml(message), MAX_TOKENS, true,
                SamplingParams.greedy());

        ChatCompletion completion = client.chat().completions().create(chatParams(stack, message, false));

        assertThat(completion.choices()).hasSize(1);
        ChatCompletion.Choice choice = completion.choices().getFirst();
        // The whole content, character for character (not "contains"): what the engine generates from the ChatML
        // prompt the gateway renders (Prompts.chatml, docs/openai.md), as in CompletionMatchesReferenceTest.
        assertThat(choice.message().content().orElseThrow()).isEqualTo(expected.text());
        assertThat(choice.finishReason()).isEqualTo(ChatCompletion.Choice.FinishReason.LENGTH);
        CompletionUsage usage = completion.usage().orElseThrow();
        assertThat(usage.completionTokens()).isEqualTo(MAX_TOKENS);
        assertThat(usage.promptTokens()).isEqualTo(expected.promptTokens());
    }

    @Test
    void sdkStreamedChatCompletionEqualsReference(TestStack stack) {
        String message = "What is disaggregated serving?";
        Generation expected = stack.reference().generate(Prompts.chatml(message), MAX_TOKENS, true,
                SamplingParams.greedy());
        StringBuilder text = new StringBuilder();
        List<String> finishReasons = new ArrayList<>();
        long completionTokens = -1;

        try (StreamResponse<ChatCompletionChunk> stream = client.chat().completions().createStreaming(
                chatParams(stack, message, true))) {
            for (ChatCompletionChunk chunk : stream.stream().toList()) {
                for (ChatCompletionChunk.Choice choice : chunk.choices()) {
                    choice.delta().content().ifPresent(text::append);
                    choice.finishReason().ifPresent(f -> finishReasons.add(f.asString()));
                }
                if (chunk.usage().isPresent()) {
                    completionTokens = chunk.usage().get().completionTokens();
                }
            }
        }

        assertThat(text.toString()).isEqualTo(expected.text());
        assertThat(finishReasons).containsExactly("length");
        assertThat(completionTokens).isEqualTo(MAX_TOKENS);
    }

    private static CompletionCreateParams completionParams(TestStack stack, String prompt, boolean stream) {
        CompletionCreateParams.Builder params = CompletionCreateParams.builder()
                .model(stack.modelName())
                .prompt(prompt)
                .maxTokens(MAX_TOKENS)
                .temperature(0.0)
                .putAdditionalBodyProperty("ignore_eos", JsonValue.from(true));
        if (stream) {
            params.streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build());
        }
        return params.build();
    }

    private static ChatCompletionCreateParams chatParams(TestStack stack, String message, boolean stream) {
        ChatCompletionCreateParams.Builder params = ChatCompletionCreateParams.builder()
                .model(stack.modelName())
                .addUserMessage(message)
                .maxCompletionTokens(MAX_TOKENS)
                .temperature(0.0)
                .putAdditionalBodyProperty("ignore_eos", JsonValue.from(true));
        if (stream) {
            params.streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build());
        }
        return params.build();
    }
}
