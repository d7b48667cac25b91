package dev.ripcord.gateway.generation;

import java.util.Objects;

/** The request's deadline (the client's {@code timeout}, capped by the server's maximum) passed before its answer. */
public final class DeadlineExceededException extends GenerationException {

    private static final long serialVersionUID = 1L;

    private final String requestId;

    public DeadlineExceededException(String requestId) {
        super("request %s ran past its deadline".formatted(requestId), null);
        this.requestId = Objects.requireNonNull(requestId, "requestId");
    }

    public String requestId() {
        return requestId;
    }
}
