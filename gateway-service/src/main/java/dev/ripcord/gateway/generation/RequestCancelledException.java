package dev.ripcord.gateway.generation;

import java.util.Locale;
import java.util.Objects;

import dev.ripcord.protocol.CancelReason;

/**
 * The request was cancelled before its answer was complete, for any reason but its deadline (which is
 * {@link DeadlineExceededException}): an explicit cancel, a cancel a worker received, a stalled client.
 */
public final class RequestCancelledException extends GenerationException {

    private static final long serialVersionUID = 1L;

    private final String requestId;
    private final String reason;

    /**
     * @param reason why, as the client is told it: lower case, e.g. {@code client_cancel} or {@code explicit via kafka}
     */
    public RequestCancelledException(String requestId, String reason) {
        super("request %s was cancelled (%s)".formatted(requestId, reason), null);
        this.requestId = Objects.requireNonNull(requestId, "requestId");
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** Cancelled at this gateway for {@code reason}. */
    public static RequestCancelledException of(String requestId, CancelReason reason) {
        return new RequestCancelledException(requestId, reason.name().toLowerCase(Locale.ROOT));
    }

    public String requestId() {
        return requestId;
    }

    /** Why it was cancelled, as shown to the client. */
    public String reason() {
        return reason;
    }
}
