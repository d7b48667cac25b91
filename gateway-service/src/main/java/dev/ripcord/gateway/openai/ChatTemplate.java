package dev.ripcord.gateway.openai;

import java.util.List;

import dev.ripcord.gateway.generation.TextCodec;
import dev.ripcord.tokenizer.chat.ChatMessage;
import dev.ripcord.tokenizer.chat.JinjaChatTemplate;

/**
 * Renders chat messages into the prompt text the model completes: with the model's own Jinja template when there
 * is one ({@link TextCodec#chatTemplate()}, rendered by the tokenizer module), otherwise with this fallback, ChatML:
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

    /** Renders with {@code template} (always with the generation prompt), or the ChatML fallback if it is null. */
    static String render(List<Message> messages, JinjaChatTemplate template) {
        if (template == null) {
            return render(messages);
        }
        return template.render(messages.stream().map(m -> new ChatMessage(m.role(), m.content())).toList(), true);
    }

    /** The ChatML fallback. */
    static String render(List<Message> messages) {
        StringBuilder prompt = new StringBuilder();
        for (Message message : messages) {
            prompt.append("<|im_start|>").append(message.role()).append('\n')
                    .append(message.content()).append("<|im_end|>\n");
        }
        return prompt.append("<|im_start|>assistant\n").toString();
    }
}
