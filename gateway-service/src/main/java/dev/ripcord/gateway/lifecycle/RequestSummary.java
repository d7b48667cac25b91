package dev.ripcord.gateway.lifecycle;

import java.util.Locale;

import dev.ripcord.protocol.CancelReason;
import org.jspecify.annotations.Nullable;

/**
 * What {@code GET /v1/requests/{id}} tells a request's owner: a consistent-enough snapshot of a {@link RequestContext}
 * (each field is read once; a request in flight moves on while it is read).
 *
 * @param requestId        the request's ID
 * @param owner            the identity of the key that started it
 * @param model            the model it asked for
 * @param created          when the gateway opened it, epoch seconds
 * @param state            {@link RequestContext.State}: active, completed or cancelled
 * @param phase            the furthest phase it reached
 * @param promptTokens     the prompt's length in tokens
 * @param completionTokens tokens relayed to the client so far
 * @param finishReason     {@code stop} or {@code length} once the last token was relayed, {@code abort} once it was
 *                         cancelled before that, else null
 * @param cancelReason     why it was cancelled, if it was (the first cancel wins)
 */
public record RequestSummary(String requestId, String owner, String model, long created, RequestContext.State state,
                             RequestPhase phase, int promptTokens, int completionTokens, @Nullable String finishReason,
                             @Nullable CancelReason cancelReason) {

    /** {@link #state()} as on the wire: {@code active}, {@code completed}, {@code cancelled}. */
    public String stateName() {
        return state.name().toLowerCase(Locale.ROOT);
    }

    /** {@link #cancelReason()} as on the wire ({@code client_cancel}, {@code deadline}, ...), or null. */
    public @Nullable String cancelReasonName() {
        return cancelReason == null ? null : cancelReason.name().toLowerCase(Locale.ROOT);
    }
}
