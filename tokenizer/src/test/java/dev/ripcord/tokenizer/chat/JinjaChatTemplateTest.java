package dev.ripcord.tokenizer.chat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/**
 * The Llama 3.2, Qwen2 and SmolLM2 Instruct templates rendered to exactly what Python's Jinja2 renders, set up as
 * transformers' apply_chat_template. Fixtures: {@code src/test/resources/dev/ripcord/tokenizer/chat}, the expected
 * strings written by its {@code generate-expected.py} (Debian python3-jinja2), never edited by hand.
 */
class JinjaChatTemplateTest {

    static String resource(String name) throws IOException {
        try (InputStream in = JinjaChatTemplateTest.class.getResourceAsStream(name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    static String text(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    @Test
    void rendersEachReferenceTemplateExactlyAsJinja2Does() throws IOException {
        JsonNode fixtures = new ObjectMapper().readTree(resource("expected.json"));
        int checked = 0;
        for (JsonNode t : fixtures.get("templates")) {
            JsonNode special = t.get("special_tokens");
            JinjaChatTemplate template = JinjaChatTemplate.of(resource(t.get("file").asText()),
                    text(special.get("bos_token")), text(special.get("eos_token")));
            Map<String, Object> variables = new HashMap<>();
            t.get("variables").properties().forEach(e -> variables.put(e.getKey(), e.getValue().asText()));
            for (JsonNode c : t.get("cases")) {
                List<ChatMessage> messages = new ArrayList<>();
                for (JsonNode m : c.get("messages")) {
                    messages.add(new ChatMessage(m.get("role").asText(), m.get("content").asText()));
                }
                String rendered = template.render(messages, c.get("add_generation_prompt").asBoolean(), variables);
                assertThat(rendered).as("%s %s", t.get("name").asText(), messages)
                        .isEqualTo(c.get("expected").asText());
                checked++;
            }
        }
        assertThat(checked).isEqualTo(12);
    }

    @Test
    void llamaTemplateDatesTheSystemHeaderWithStrftimeNowWhenNoDateIsGiven() throws IOException {
        JinjaChatTemplate llama = JinjaChatTemplate.of(resource("Llama-3.2-3B-Instruct.jinja"), "<|begin_of_text|>",
                "<|eot_id|>");
        String rendered = llama.render(List.of(new ChatMessage("user", "Hi")), true);
        assertThat(rendered).containsPattern("Today Date: \\d\\d [A-Z][a-z]{2} \\d{4}\n");
    }

    @Test
    void strftimeFormatsThePythonDirectivesTemplatesUse() {
        ZonedDateTime t = ZonedDateTime.of(2024, 7, 6, 13, 5, 9, 0, ZoneOffset.UTC);
        assertThat(TemplateFunctions.strftime(t, "%d %b %Y")).isEqualTo("06 Jul 2024");
        assertThat(TemplateFunctions.strftime(t, "%A %B %y %H:%M:%S %p %%")).isEqualTo(
                "Saturday July 24 13:05:09 PM %");
    }

    @Test
    void raiseExceptionRefusesTheConversationWithTheTemplatesMessage() {
        JinjaChatTemplate strict = JinjaChatTemplate.of(
                "{% if messages[0]['role'] == 'assistant' %}{{ raise_exception('Conversation must start with a user')"
                        + " }}{% endif %}{{ messages[0]['content'] }}", null, null);
        assertThat(strict.render(List.of(new ChatMessage("user", "ok")), false)).isEqualTo("ok");
        assertThatThrownBy(() -> strict.render(List.of(new ChatMessage("assistant", "no")), false))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.raisedByTemplate()).isTrue())
                .hasMessage("Conversation must start with a user");
        // A template that refuses a lone user message still loads; one that does not parse does not.
        JinjaChatTemplate needsSystem = JinjaChatTemplate.of("{% if messages[0]['role'] != 'system' %}"
                + "{{ raise_exception('system first') }}{% endif %}ok", null, null);
        assertThat(needsSystem.render(List.of(new ChatMessage("system", "s")), false)).isEqualTo("ok");
        assertThatThrownBy(() -> JinjaChatTemplate.of("{% for m in messages %}", null, null))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> assertThat(e.raisedByTemplate()).isFalse());
    }

    @Test
    void templateSyntaxInsideAMessageIsTextNeverCode() throws IOException {
        // Regression: Jinjava's default nested interpretation rendered "{{ ... }}" found in a message's content.
        JinjaChatTemplate smol = JinjaChatTemplate.of(resource("SmolLM2-1.7B-Instruct.jinja"), "<|im_start|>",
                "<|im_end|>");
        String content = "{{ raise_exception('injected') }} {% for x in messages %}{{ x }}{% endfor %}";
        assertThat(smol.render(List.of(new ChatMessage("system", "S"), new ChatMessage("user", content)), false))
                .isEqualTo("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\n" + content + "<|im_end|>\n");
    }

    @Test
    void lstripBlocksStripsOnlyIndentationBeforeATagAsJinja2Does() {
        // Expected strings from Python's Jinja2 3.1.2 with trim_blocks and lstrip_blocks.
        JinjaChatTemplate t = JinjaChatTemplate.of("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
                + "{% if add_generation_prompt %}[assistant] {% endif %}", null, null);
        assertThat(t.render(List.of(new ChatMessage("user", "Hi")), true)).isEqualTo("[user] Hi\n[assistant] ");
        JinjaChatTemplate indented = JinjaChatTemplate.of("a  {% if true %}b{% endif %}\n  {% if true %}c{% endif %}",
                null, null);
        assertThat(indented.render(List.of(), false)).isEqualTo("a  bc");
    }
}
