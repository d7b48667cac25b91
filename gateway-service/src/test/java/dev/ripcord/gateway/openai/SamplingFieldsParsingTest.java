package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import dev.ripcord.gateway.generation.ByteTextCodec;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.GenerationRequest.Kind;
import dev.ripcord.gateway.generation.SamplingOptions;
import org.junit.jupiter.api.Test;

/**
 * The optional OpenAI request fields as the parser reads them: each sampling knob, stop token ids, logprobs in both
 * endpoints' forms, {@code n}, the {@code developer} role, {@code continuous_usage_stats}, {@code user}, and
 * OpenAI's default {@code max_tokens}; out-of-range values are 400s naming the field (the table of refusals is
 * {@link HostileInputTest} and {@link RequestValidationTest}).
 */
class SamplingFieldsParsingTest {

    private static final String MODEL = "\"model\":\"" + ByteTextCodec.MODEL + "\"";
    private static final String PROMPT = MODEL + ",\"prompt\":\"hello\"";
    private static final String MESSAGES = MODEL + ",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]";

    private final RequestParser parser = new RequestParser(new ByteTextCodec(), Duration.ofMinutes(1), 4);

    private GenerationRequest completion(String fields) {
        return parse(Kind.COMPLETION, "{" + PROMPT + fields + "}", "req-1");
    }

    private GenerationRequest chat(String fields) {
        return parse(Kind.CHAT, "{" + MESSAGES + fields + "}", "req-1");
    }

    private GenerationRequest parse(Kind kind, String body, String id) {
        return parser.parse(kind, body.getBytes(StandardCharsets.UTF_8), id, null);
    }

    @Test
    void cacheSaltIsReadInBothEndpointsAndMustBeANonEmptyString() {
        assertThat(completion("").cacheSalt()).isNull();
        assertThat(completion(",\"cache_salt\":\"tenant-7\"").cacheSalt()).isEqualTo("tenant-7");
        assertThat(chat(",\"cache_salt\":\"tenant-7\"").cacheSalt()).isEqualTo("tenant-7");
        assertThatThrownBy(() -> completion(",\"cache_salt\":\"\"")).isInstanceOf(ApiException.class)
                .hasMessageContaining("cache_salt");
        assertThatThrownBy(() -> chat(",\"cache_salt\":7")).isInstanceOf(ApiException.class)
                .hasMessageContaining("cache_salt");
    }

    @Test
    void withoutTheNewFieldsEveryKnobIsNeutral() {
        GenerationRequest request = completion("");
        assertThat(request.sampling()).isEqualTo(SamplingOptions.NONE);
        assertThat(request.n()).isEqualTo(1);
        assertThat(request.continuousUsage()).isFalse();
        assertThat(chat("").sampling()).isEqualTo(SamplingOptions.NONE);
    }

    @Test
    void everySamplingKnobIsReadWithItsValue() {
        SamplingOptions options = completion(",\"top_k\":40,\"min_p\":0.05,\"repetition_penalty\":1.3,"
                + "\"presence_penalty\":-1.5,\"frequency_penalty\":2,\"logit_bias\":{\"104\":-100,\"7\":2.5},"
                + "\"stop_token_ids\":[10,46]").sampling();
        assertThat(options.topK()).isEqualTo(40);
        assertThat(options.minP()).isEqualTo(0.05);
        assertThat(options.repetitionPenalty()).isEqualTo(1.3);
        assertThat(options.presencePenalty()).isEqualTo(-1.5);
        assertThat(options.frequencyPenalty()).isEqualTo(2.0);
        assertThat(options.logitBias()).isEqualTo(Map.of(104, -100.0, 7, 2.5));
        assertThat(options.stopTokenIds()).containsExactly(10, 46);
        assertThat(chat(",\"top_k\":3,\"stop_token_ids\":[1]").sampling().topK()).isEqualTo(3);
    }

    @Test
    void topKOfMinusOneOrZeroIsOffAndTheRangesEndsAreAccepted() {
        assertThat(completion(",\"top_k\":-1").sampling().topK()).isZero();
        assertThat(completion(",\"top_k\":0").sampling().topK()).isZero();
        assertThat(completion(",\"min_p\":1,\"presence_penalty\":2,\"frequency_penalty\":-2,"
                + "\"repetition_penalty\":100,\"logit_bias\":{\"257\":100}").sampling())
                .extracting(SamplingOptions::minP, SamplingOptions::presencePenalty,
                        SamplingOptions::frequencyPenalty, SamplingOptions::repetitionPenalty)
                .containsExactly(1.0, 2.0, -2.0, 100.0);
    }

    @Test
    void completionLogprobsIsTheNumberOfAlternativesAndNullIsNone() {
        assertThat(completion(",\"logprobs\":0").sampling().logprobs()).isZero();
        assertThat(completion(",\"logprobs\":5").sampling().logprobs()).isEqualTo(5);
        assertThat(completion(",\"logprobs\":null").sampling().logprobs()).isEqualTo(-1);
        assertRefused(() -> completion(",\"logprobs\":true"), ErrorCode.INVALID_TYPE, "logprobs");
    }

    @Test
    void chatLogprobsIsABooleanAndTopLogprobsItsAlternatives() {
        assertThat(chat(",\"logprobs\":true").sampling().logprobs()).isZero();
        assertThat(chat(",\"logprobs\":true,\"top_logprobs\":20").sampling().logprobs()).isEqualTo(20);
        assertThat(chat(",\"logprobs\":false").sampling().logprobs()).isEqualTo(-1);
        assertRefused(() -> chat(",\"logprobs\":false,\"top_logprobs\":2"), ErrorCode.INVALID_VALUE, "top_logprobs");
        assertRefused(() -> completion(",\"top_logprobs\":2"), ErrorCode.UNKNOWN_PARAMETER, "top_logprobs");
    }

    @Test
    void nUpToTheConfiguredMaximumWhateverTheLengthOfTheRequestId() {
        assertThat(completion(",\"n\":4").n()).isEqualTo(4);
        assertRefused(() -> completion(",\"n\":5"), ErrorCode.INVALID_VALUE, "n");
        // Choices are known to the workers by a suffix of the request's internal ID, which fits any client ID.
        assertThat(parse(Kind.COMPLETION, "{" + PROMPT + ",\"n\":4}", "x".repeat(128)).n()).isEqualTo(4);
        assertThat(parse(Kind.COMPLETION, "{" + PROMPT + ",\"n\":1}", "x".repeat(128)).n()).isEqualTo(1);
    }

    @Test
    void theDeveloperRoleIsRenderedAsSystem() {
        String asDeveloper = "[{\"role\":\"developer\",\"content\":\"Be terse.\"},{\"role\":\"user\",\"content\":\"hi\"}]";
        String asSystem = asDeveloper.replace("developer", "system");
        int[] developer = parse(Kind.CHAT, "{" + MODEL + ",\"messages\":" + asDeveloper + "}", "r").promptTokens();
        int[] system = parse(Kind.CHAT, "{" + MODEL + ",\"messages\":" + asSystem + "}", "r").promptTokens();
        assertThat(developer).containsExactly(system);
        assertThat(ByteTextCodec.decode(developer)).contains("<|im_start|>system\nBe terse.<|im_end|>");
    }

    @Test
    void continuousUsageStatsIsReadFromStreamOptions() {
        GenerationRequest request = completion(",\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":true}");
        assertThat(request.continuousUsage()).isTrue();
        assertThat(request.includeUsage()).isFalse();
        assertRefused(() -> completion(",\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":1}"),
                ErrorCode.INVALID_TYPE, "stream_options.continuous_usage_stats");
    }

    @Test
    void userIsKept() {
        assertThat(completion(",\"user\":\"alice-7\"").user()).isEqualTo("alice-7");
    }

    @Test
    void completionsDefaultToSixteenTokensAsOpenAiAndChatToTheRoomLeft() {
        assertThat(completion("").maxTokens()).isEqualTo(16);
        assertThat(completion(",\"max_tokens\":50").maxTokens()).isEqualTo(50);
        // 250 prompt bytes in a 256 context: the default is cut to the room left
        assertThat(parse(Kind.COMPLETION, "{" + MODEL + ",\"prompt\":\"" + "x".repeat(250) + "\"}", "r").maxTokens())
                .isEqualTo(6);
        assertThat(chat("").maxTokens()).isEqualTo(ByteTextCodec.MAX_TOKENS_LIMIT);
    }

    @Test
    void unknownFieldsStayA400NamingTheField() {
        for (String field : List.of("foo", "best_of_n", "topK", "guided_json")) {
            assertRefused(() -> completion(",\"" + field + "\":1"), ErrorCode.UNKNOWN_PARAMETER, field);
            assertRefused(() -> chat(",\"" + field + "\":1"), ErrorCode.UNKNOWN_PARAMETER, field);
        }
    }

    @Test
    void logitBiasAndStopTokenIdsHaveCappedEntryCountsNamedInTheError() {
        // ids repeat past the vocabulary (258): the count is refused before any entry is looked at
        String bias = IntStream.range(0, RequestParser.MAX_LOGIT_BIAS_ENTRIES + 1)
                .mapToObj(i -> "\"" + i + "\":1").collect(Collectors.joining(",", "{", "}"));
        String ids = IntStream.range(0, RequestParser.MAX_STOP_TOKEN_IDS + 1)
                .mapToObj(i -> String.valueOf(i % 258)).collect(Collectors.joining(",", "[", "]"));
        assertRefused(() -> completion(",\"logit_bias\":" + bias), ErrorCode.INVALID_VALUE, "logit_bias");
        assertRefused(() -> chat(",\"stop_token_ids\":" + ids), ErrorCode.INVALID_VALUE, "stop_token_ids");
        assertThatThrownBy(() -> chat(",\"logit_bias\":" + bias)).hasMessageContaining("at most 300 entries, got 301");
        assertThatThrownBy(() -> completion(",\"stop_token_ids\":" + ids))
                .hasMessageContaining("at most 64 token ids, got 65");

        // at the caps: accepted
        String fullIds = IntStream.range(0, RequestParser.MAX_STOP_TOKEN_IDS)
                .mapToObj(String::valueOf).collect(Collectors.joining(",", "[", "]"));
        assertThat(chat(",\"stop_token_ids\":" + fullIds).sampling().stopTokenIds())
                .hasSize(RequestParser.MAX_STOP_TOKEN_IDS);
        String fullBias = IntStream.range(0, 258).mapToObj(i -> "\"" + i + "\":1")
                .collect(Collectors.joining(",", "{", "}"));
        assertThat(completion(",\"logit_bias\":" + fullBias).sampling().logitBias()).hasSize(258);
    }

    private static void assertRefused(Runnable call, ErrorCode code, String param) {
        assertThatThrownBy(call::run).isInstanceOfSatisfying(ApiException.class, e -> {
            assertThat(e.errorCode()).isEqualTo(code);
            assertThat(e.param()).isEqualTo(param);
        });
    }
}
