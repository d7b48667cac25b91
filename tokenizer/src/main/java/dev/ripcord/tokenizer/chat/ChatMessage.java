package dev.ripcord.tokenizer.chat;

import java.util.Objects;

/**
 * One chat message as templates see it: {@code message.role}, {@code message['content']}.
 *
 * @param role    {@code system}, {@code user} or {@code assistant}
 * @param content the text
 */
public record ChatMessage(String role, String content) {
    public ChatMessage {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(content, "content");
    }
}
