package dev.ripcord.gateway.openai;

import java.util.List;

import dev.ripcord.gateway.generation.TextCodec;

/**
 * Renders chat messages into the prompt text the model completes, in ChatML:
 *
 * <pre>
 * &lt;|im_start|&gt;system
 * You are terse.&lt;|im_end|&gt;
 * &lt;|im_start|&gt;user
 * Hi!&lt;|im_end|&gt;
 * &lt;|im_start|&gt;assistant
 * </pre>
 *
 * Each message is {@code <|im_start|>ROLE\nCONTENT<|im_end|>\n}; the prompt ends with the generation prompt
 * {@code <|im_start|>assistant\n}, also after a final assistant message (no "continue the last message" mode).
 * Content given as text parts is joined with {@code "\n"}. The markers are plain text here; whether they become
 * special tokens is the {@link TextCodec}'s business. The same template is documented in {@code docs/openai.md}.
 */
final class ChatTemplate {

    private ChatTemplate() {
    }

    /** One validated message. */
    record Message(String role, String content) {
    }

    static String render(List<Message> messages) {
        StringBuilder prompt = new StringBuilder();
        for (Message message : messages) {
            prompt.append("<|im_start|>").append(message.role()).append('\n')
                    .append(message.content()).append("<|im_end|>\n");
        }
        return prompt.append("<|im_start|>assistant\n").toString();
    }
}
