package dev.ripcord.gateway.generation;

import java.util.Objects;

/**
 * How one generation ended, as its client saw it: what the OpenAI edge reports once per generation (to the metrics,
 * {@code ripcord.request.success} and the per-request histograms). Requests refused before their generation started
 * (a malformed body, an unknown model) have no outcome; {@code http_server_requests} counts them.
 *
 * @param request          the generation's request
 * @param finishReason     how it ended
 * @param errorCode        the {@code code} of the OpenAI error the client received, or {@link #NO_ERROR}
 * @param completionTokens tokens generated (and relayed) before it ended
 * @param elapsedNanos     the generation's start (its subscription) to its end
 */
public record RequestOutcome(GenerationRequest request, FinishReason finishReason, String errorCode,
        int completionTokens, long elapsedNanos) {

    /** {@link #errorCode()} of an outcome without an error: finished, or the client went away. */
    public static final String NO_ERROR = "none";

    /** vLLM's finish reasons, and {@code error}. */
    public enum FinishReason {
        /** EOS, an end-of-turn token, or a stop string. */
        STOP,
        /** {@code max_tokens} reached. */
        LENGTH,
        /** Cancelled: the client went away or cancelled it, its deadline passed, or a worker received a cancel. */
        ABORT,
        /** Failed: no worker available, a worker failed, a duplicate ID, an internal error. */
        ERROR;

        /** The label value: the name in lower case, as in the OpenAI {@code finish_reason}. */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        /** The reason a last {@link TextDelta} carries ({@code stop}, {@code length} or {@code abort}). */
        public static FinishReason ofText(String finishReason) {
            return switch (finishReason) {
                case "length" -> LENGTH;
                case "abort" -> ABORT;
                default -> STOP;
            };
        }
    }

    public RequestOutcome {
        Objects.requireNonNull(request, "request");
        Objects.requireNonNull(finishReason, "finishReason");
        Objects.requireNonNull(errorCode, "errorCode");
    }

    /** Who hears of outcomes; called once per generation, on whatever thread ended it. Must not block. */
    @FunctionalInterface
    public interface Listener {

        /** Hears nothing: for handlers built without metrics (tests). */
        Listener NONE = outcome -> { };

        void finished(RequestOutcome outcome);
    }
}
