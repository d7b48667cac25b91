package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.List;

import dev.ripcord.gateway.generation.ByteTextCodec;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.GenerationRequest.Kind;
import dev.ripcord.gateway.generation.TextCodec;
import dev.ripcord.gateway.generation.RequestOutcome;
import dev.ripcord.tokenizer.chat.ChatTemplateException;
import dev.ripcord.tokenizer.chat.JinjaChatTemplate;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/** Chat requests rendered with the model's own template when the codec has one, the ChatML fallback otherwise. */
class ModelChatTemplateTest {
    static final String SMOLLM2 = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
            + "{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>"
            + "\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
            + "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

    /** The byte codec with a template; templated prompts are marked with a leading 0 token to tell them apart. */
    static final class TemplatedCodec extends ForwardingCodec {
        final JinjaChatTemplate template;

        TemplatedCodec(JinjaChatTemplate template) {
            this.template = template;
        }

        @Override
        public JinjaChatTemplate chatTemplate() {
            return template;
        }

        @Override
        public int[] encodeTemplated(String prompt) {
            int[] text = encode(prompt);
            int[] out = new int[text.length + 1];
            System.arraycopy(text, 0, out, 1, text.length);
            return out;
        }
    }

    static class ForwardingCodec implements TextCodec {
        final ByteTextCodec bytes = new ByteTextCodec();

        @Override
        public int[] encode(String text) {
            return bytes.encode(text);
        }

        @Override
        public int vocabularySize() {
            return bytes.vocabularySize();
        }

        @Override
        public int contextLength() {
            return bytes.contextLength();
        }

        @Override
        public String modelName() {
            return bytes.modelName();
        }

        @Override
        public int maxTokensLimit() {
            return bytes.maxTokensLimit();
        }

        @Override
        public Detokenizer newDetokenizer() {
            return bytes.newDetokenizer();
        }
    }

    static GenerationRequest chat(TextCodec codec, String messages) {
        String body = "{\"model\":\"" + ByteTextCodec.MODEL + "\",\"messages\":" + messages + "}";
        return new RequestParser(codec, Duration.ofMinutes(1)).parse(Kind.CHAT, body.getBytes(StandardCharsets.UTF_8),
                "req-1", null);
    }

    @Test
    void aModelTemplateRendersTheChatAndItsPromptIsEncodedAsTemplated() {
        GenerationRequest request = chat(new TemplatedCodec(JinjaChatTemplate.of(SMOLLM2, "<|im_start|>",
                "<|im_end|>")), "[{\"role\":\"user\",\"content\":\"Hi!\"}]");
        int[] tokens = request.promptTokens();
        assertThat(tokens[0]).isZero();
        assertThat(ByteTextCodec.decode(java.util.Arrays.copyOfRange(tokens, 1, tokens.length))).isEqualTo(
                "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
                        + "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n");
    }

    @Test
    void withoutAModelTemplateTheChatMlFallbackIsUsed() {
        GenerationRequest request = chat(new ForwardingCodec(), "[{\"role\":\"user\",\"content\":\"Hi!\"}]");
        assertThat(ByteTextCodec.decode(request.promptTokens()))
                .isEqualTo(ChatTemplate.render(List.of(new ChatTemplate.Message("user", "Hi!"))));
        assertThat(ChatTemplate.render(List.of(new ChatTemplate.Message("user", "Hi!")), null))
                .isEqualTo(ChatTemplate.render(List.of(new ChatTemplate.Message("user", "Hi!"))));
    }

    @Test
    void aTemplateThatRaisesAnExceptionIsAClientErrorWithItsMessage() {
        JinjaChatTemplate strict = JinjaChatTemplate.of("{% if messages[0]['role'] != 'user' %}"
                + "{{ raise_exception('Conversations must start with a user message') }}{% endif %}x", null, null);
        assertThatThrownBy(() -> chat(new TemplatedCodec(strict),
                "[{\"role\":\"assistant\",\"content\":\"A\"}]"))
                .isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.errorCode()).isEqualTo(ErrorCode.INVALID_VALUE);
                    assertThat(e.getReason()).contains("Conversations must start with a user message");
                });
    }

    /** Loops a billion times for the message "attack"; any other conversation renders normally. */
    static final String LOOPS_ON_ATTACK = "{% if messages[0]['content'] == 'attack' %}{% for i in range(1000) %}"
            + "{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}{% endfor %}{% endif %}"
            + "{{ messages[0]['content'] }}";

    @Test
    void aTemplateThatGoesPastARenderLimitIsA400WithAStableCode() {
        JinjaChatTemplate looping = JinjaChatTemplate.of(LOOPS_ON_ATTACK, null, null);
        assertThatThrownBy(() -> chat(new TemplatedCodec(looping), "[{\"role\":\"user\",\"content\":\"attack\"}]"))
                .isInstanceOfSatisfying(ApiException.class, e -> {
                    assertThat(e.errorCode()).isEqualTo(ErrorCode.CHAT_TEMPLATE_LIMIT_EXCEEDED);
                    assertThat(e.errorCode().code()).isEqualTo("chat_template_limit_exceeded");
                    assertThat(e.errorCode().status().value()).isEqualTo(400);
                    assertThat(e.getReason()).contains("render limit");
                });
    }

    @Test
    void aTemplateThatTriesToIncludeAFileIsAServerError() {
        JinjaChatTemplate including = JinjaChatTemplate.of("{% if messages[0]['content'] == 'attack' %}"
                + "{% include 'application.yml' %}{% endif %}x", null, null);
        assertThatThrownBy(() -> chat(new TemplatedCodec(including), "[{\"role\":\"user\",\"content\":\"attack\"}]"))
                .isInstanceOfSatisfying(ChatTemplateException.class,
                        e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.FORBIDDEN));
    }

    @Test
    void chatWithATemplateIsParsedOnTheTemplateThreadsHoweverSmallItsBody() {
        Scheduler renderers = Schedulers.newBoundedElastic(1, 1, "chat-template-test");
        try {
            OpenAiHandler handler = new OpenAiHandler(request -> Flux.empty(),
                    new TemplatedCodec(JinjaChatTemplate.of(SMOLLM2, null, null)), OpenAiProperties.defaults(),
                    Clock.systemUTC(), new StreamGuard(Duration.ofMinutes(1)), RequestOutcome.Listener.NONE, renderers);
            byte[] small = new byte[8];
            assertThat(handler.parseOn(Kind.CHAT, small).map(b -> Thread.currentThread().getName()).block())
                    .startsWith("chat-template-test");
            // completions have no template: a small body stays on the calling thread as before
            assertThat(handler.parseOn(Kind.COMPLETION, small).map(b -> Thread.currentThread().getName()).block())
                    .isEqualTo(Thread.currentThread().getName());
        } finally {
            renderers.dispose();
        }
    }
}
