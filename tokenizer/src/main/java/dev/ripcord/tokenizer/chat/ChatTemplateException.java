package dev.ripcord.tokenizer.chat;

import java.util.Objects;

/**
 * A chat template that does not parse or render, that refused the conversation ({@code raise_exception}), that
 * went past its {@link ChatTemplateLimits}, or that asked for something the sandbox forbids.
 */
public final class ChatTemplateException extends IllegalArgumentException {

    /** Why a render failed; callers map each to a stable error code. */
    public enum Kind {
        /** The template does not parse or fails while rendering: a bug in the template. */
        TEMPLATE_ERROR,
        /** The template called {@code raise_exception}: a refusal of this conversation. */
        RAISED,
        /** The render went past an output, string, list, step or time limit. */
        LIMIT_EXCEEDED,
        /** The template asked for something the sandbox never allows ({@code include}, {@code import}). */
        FORBIDDEN
    }

    private final Kind kind;

    public ChatTemplateException(String message) {
        this(message, Kind.TEMPLATE_ERROR);
    }

    public ChatTemplateException(String message, Kind kind) {
        super(message);
        this.kind = Objects.requireNonNull(kind, "kind");
    }

    public Kind kind() {
        return kind;
    }

    /** True when the template itself called {@code raise_exception}: a refusal of this conversation, not a bug. */
    public boolean raisedByTemplate() {
        return kind == Kind.RAISED;
    }
}
