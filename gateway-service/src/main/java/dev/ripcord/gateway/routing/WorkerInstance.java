package dev.ripcord.gateway.routing;

import java.net.URI;
import java.util.concurrent.atomic.AtomicInteger;

/** One prefill or decode worker the gateway can route to, with its count of requests in flight. */
public final class WorkerInstance {

    private final String role;
    private final URI uri;
    private final AtomicInteger outstanding = new AtomicInteger();

    WorkerInstance(String role, URI uri) {
        this.role = role;
        this.uri = uri;
    }

    public String role() {
        return role;
    }

    public URI uri() {
        return uri;
    }

    /** Requests routed here and not yet finished. */
    public int outstanding() {
        return outstanding.get();
    }

    AtomicInteger counter() {
        return outstanding;
    }

    @Override
    public String toString() {
        return role + "@" + uri;
    }
}
