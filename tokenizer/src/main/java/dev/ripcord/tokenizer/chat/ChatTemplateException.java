package dev.ripcord.tokenizer.chat;

/** A chat template that does not parse or render, or that refused the conversation ({@code raise_exception}). */
public final class ChatTemplateException extends IllegalArgumentException {
    private final boolean raisedByTemplate;

    public ChatTemplateException(String message) {
        this(message, false);
    }

    ChatTemplateException(String message, boolean raisedByTemplate) {
        super(message);
        this.raisedByTemplate = raisedByTemplate;
    }

    /** True when the template itself called {@code raise_exception}: a refusal of this conversation, not a bug. */
    public boolean raisedByTemplate() {
        return raisedByTemplate;
    }
}
