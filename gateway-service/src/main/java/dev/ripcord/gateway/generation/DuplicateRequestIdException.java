package dev.ripcord.gateway.generation;

import java.util.Objects;

/** A request with the same ID is still in flight here: IDs name one request at a time. */
public final class DuplicateRequestIdException extends GenerationException {

    private static final long serialVersionUID = 1L;

    private final String requestId;

    public DuplicateRequestIdException(String requestId) {
        super("a request with id %s is already in flight".formatted(requestId), null);
        this.requestId = Objects.requireNonNull(requestId, "requestId");
    }

    public String requestId() {
        return requestId;
    }
}
