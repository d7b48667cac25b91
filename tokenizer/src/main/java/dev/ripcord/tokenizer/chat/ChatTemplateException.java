package dev.ripcord.tokenizer.chat;

/** A chat template that does not parse, or that refused the conversation ({@code raise_exception}). */
public final class ChatTemplateException extends IllegalArgumentException {
    public ChatTemplateException(String message) {
        super(message);
    }
}
