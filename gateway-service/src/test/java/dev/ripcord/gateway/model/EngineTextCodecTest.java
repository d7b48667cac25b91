package dev.ripcord.gateway.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import dev.ripcord.tokenizer.chat.ChatMessage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EngineTextCodecTest {

    @TempDir
    Path dir;

    static ModelProperties tiny() {
        return new ModelProperties("tiny", null, null, null, 4096);
    }

    @Test
    void withoutAnOverrideALlama2cModelHasNoTemplateSoChatUsesTheFallback() {
        assertThat(EngineTextCodec.from(tiny(), new ChatTemplateProperties(null)).chatTemplate()).isNull();
    }

    @Test
    void anOverrideFileBecomesTheChatTemplateAndItsPromptsStartWithBos() throws IOException {
        Path file = Files.writeString(dir.resolve("t.jinja"),
                "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
                        + "{% if add_generation_prompt %}[assistant] {% endif %}");
        EngineTextCodec codec = EngineTextCodec.from(tiny(), new ChatTemplateProperties(file));
        String prompt = codec.chatTemplate().render(List.of(new ChatMessage("user", "Hi")), true);
        assertThat(prompt).isEqualTo("[user] Hi\n[assistant] ");
        int[] tokens = codec.encodeTemplated(prompt);
        assertThat(tokens[0]).isEqualTo(1); // BOS, as completions get with llama2.c-style tokenizers
        assertThat(tokens).hasSize(1 + prompt.length());
    }

    @Test
    void anUnreadableOrBrokenOverrideFailsNamingTheFile() throws IOException {
        assertThatThrownBy(() -> EngineTextCodec.from(tiny(), new ChatTemplateProperties(dir.resolve("none.jinja"))))
                .hasMessageContaining("none.jinja");
        Path broken = Files.writeString(dir.resolve("broken.jinja"), "{% for m in messages %}no end");
        assertThatThrownBy(() -> EngineTextCodec.from(tiny(), new ChatTemplateProperties(broken)))
                .hasMessageContaining("broken.jinja");
    }
}
