package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

class ChatTemplateTest {

    @Test
    void rendersChatMlEndingWithTheGenerationPrompt() {
        String prompt = ChatTemplate.render(List.of(new ChatTemplate.Message("system", "S"),
                new ChatTemplate.Message("user", "U")));

        assertThat(prompt).isEqualTo("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
                + "<|im_start|>assistant\n");
    }

    @Test
    void finalAssistantMessageIsClosedNotContinued() {
        String prompt = ChatTemplate.render(List.of(new ChatTemplate.Message("assistant", "A")));

        assertThat(prompt).isEqualTo("<|im_start|>assistant\nA<|im_end|>\n<|im_start|>assistant\n");
    }
}
