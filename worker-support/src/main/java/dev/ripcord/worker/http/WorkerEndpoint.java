package dev.ripcord.worker.http;

import java.time.Duration;

import dev.ripcord.protocol.Sampling;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.worker.job.WorkerScheduler;
import org.jspecify.annotations.Nullable;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * A worker's own part of the internal HTTP API: its submit route. Everything else (status, read from the worker's
 * {@link WorkerScheduler}; journal, in-band cancel, the job stream, 400/409/503) is {@link WorkerRoutes}', which
 * serves the one endpoint bean a worker declares.
 */
public abstract class WorkerEndpoint<R> {

    private final String role;
    private final String submitPath;
    private final Duration retryAfter;
    private final WorkerScheduler<?, ?> scheduler;
    private final Class<R> bodyType;

    /**
     * @param role       {@code prefill} or {@code decode}
     * @param submitPath where jobs are submitted, e.g. {@code /internal/v1/prefill}
     * @param retryAfter what {@code Retry-After} says when the worker refuses for lack of room
     * @param scheduler  the worker's scheduler, whose figures the status reports
     * @param bodyType   the submit route's request body
     */
    protected WorkerEndpoint(String role, String submitPath, Duration retryAfter, WorkerScheduler<?, ?> scheduler,
                             Class<R> bodyType) {
        this.role = role;
        this.submitPath = submitPath;
        this.retryAfter = retryAfter;
        this.scheduler = scheduler;
        this.bodyType = bodyType;
    }

    public final String role() {
        return role;
    }

    public final String submitPath() {
        return submitPath;
    }

    public final Duration retryAfter() {
        return retryAfter;
    }

    /**
     * Reads and validates the body, then {@link #accept}s it. An empty or invalid body is a 400 before anything is
     * registered or reserved: a bad request leaves nothing behind.
     */
    final Mono<ServerResponse> submit(ServerRequest request, WorkerRoutes routes) {
        return request.bodyToMono(bodyType).flatMap(body -> {
            String invalid = invalid(body);
            return invalid != null ? routes.badRequest(invalid) : accept(body, routes);
        }).switchIfEmpty(Mono.defer(() -> routes.badRequest(
                "the body is empty; a " + bodyType.getSimpleName() + " is required")));
    }

    /** What is wrong with {@code body} before any work is admitted for it, or null. */
    protected abstract @Nullable String invalid(R body);

    /** Submits a valid body and answers with the job's stream ({@link WorkerRoutes#stream}) or a refusal. */
    protected abstract Mono<ServerResponse> accept(R body, WorkerRoutes routes);

    /** Whether sampling settings are usable: a finite temperature >= 0 and a top_p in (0, 1]. */
    protected static boolean validSampling(@Nullable Sampling sampling) {
        if (sampling == null) {
            return false;
        }
        try {
            dev.ripcord.worker.WireSampling.toEngine(sampling); // the engine's own range checks, every knob
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** The worker's status: its scheduler's figures, and what every worker has ({@link WorkerRoutes#status}). */
    final WorkerStatus status(WorkerRoutes routes) {
        return routes.status(role, scheduler.waiting(), scheduler.running(), scheduler.aborts(),
                scheduler.chunksComputed());
    }
}
