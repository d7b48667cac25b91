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

    @Test
    void aGgufModelGivesShapeTokenizerAndChatTemplateFromItsMetadataAlone() throws IOException {
        List<String> tokens = new java.util.ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        for (int b = 0; b < 256; b++) {
            tokens.add("<0x%02X>".formatted(b));
        }
        tokens.addAll(List.of("▁", "H", "i", "▁H", "▁Hi", "<|im_end|>"));
        List<Integer> types = new java.util.ArrayList<>(List.of(2, 3, 3));
        List<Float> scores = new java.util.ArrayList<>(List.of(0f, 0f, 0f));
        for (int i = 3; i < tokens.size(); i++) {
            types.add(tokens.get(i).startsWith("<0x") ? 6 : tokens.get(i).startsWith("<|") ? 3 : 1);
            scores.add(tokens.get(i).startsWith("<0x") ? 0f : (float) -i);
        }
        Path file = dir.resolve("chat.gguf");
        new dev.ripcord.format.gguf.GgufWriter().putString("general.architecture", "llama")
                .putU32("llama.context_length", 128)
                .putString("tokenizer.ggml.model", "llama")
                .putArray("tokenizer.ggml.tokens", dev.ripcord.format.gguf.GgufValueType.STRING, tokens)
                .putArray("tokenizer.ggml.scores", dev.ripcord.format.gguf.GgufValueType.FLOAT32, scores)
                .putArray("tokenizer.ggml.token_type", dev.ripcord.format.gguf.GgufValueType.INT32, types)
                .putU32("tokenizer.ggml.bos_token_id", 1).putU32("tokenizer.ggml.eos_token_id", 2)
                .putString("tokenizer.chat_template", "{{ bos_token }}{% for m in messages %}{{ m.content }}"
                        + "<|im_end|>{% endfor %}")
                .write(file);
        EngineTextCodec codec = EngineTextCodec.from(new ModelProperties("small", file, null, null, 4096),
                new ChatTemplateProperties(null));
        assertThat(codec.contextLength()).isEqualTo(128);
        assertThat(codec.vocabularySize()).isEqualTo(tokens.size());
        assertThat(codec.modelName()).isEqualTo("chat");
        String prompt = codec.chatTemplate().render(List.of(new ChatMessage("user", "Hi")), true);
        assertThat(prompt).isEqualTo("<s>Hi<|im_end|>");
        // BOS and <|im_end|> are parsed as the special tokens the template wrote; nothing is added.
        int imEnd = tokens.indexOf("<|im_end|>");
        assertThat(codec.encodeTemplated(prompt)).containsExactly(1, tokens.indexOf("▁Hi"), imEnd);
    }
}
