package dev.ripcord.worker.http;

import java.time.Duration;

import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.worker.job.WorkerScheduler;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * A worker's own part of the internal HTTP API: its submit route. Everything else (status, read from the worker's
 * {@link WorkerScheduler}; journal, in-band cancel, the job stream, 400/409/503) is {@link WorkerRoutes}', which
 * serves the one endpoint bean a worker declares.
 */
public abstract class WorkerEndpoint {

    private final String role;
    private final String submitPath;
    private final Duration retryAfter;
    private final WorkerScheduler<?, ?> scheduler;

    /**
     * @param role       {@code prefill} or {@code decode}
     * @param submitPath where jobs are submitted, e.g. {@code /internal/v1/prefill}
     * @param retryAfter what {@code Retry-After} says when the worker refuses for lack of room
     * @param scheduler  the worker's scheduler, whose figures the status reports
     */
    protected WorkerEndpoint(String role, String submitPath, Duration retryAfter, WorkerScheduler<?, ?> scheduler) {
        this.role = role;
        this.submitPath = submitPath;
        this.retryAfter = retryAfter;
        this.scheduler = scheduler;
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

    /** Validates, submits and answers with the job's stream ({@link WorkerRoutes#stream}) or a refusal. */
    protected abstract Mono<ServerResponse> submit(ServerRequest request, WorkerRoutes routes);

    /** The worker's status: its scheduler's figures, and what every worker has ({@link WorkerRoutes#status}). */
    final WorkerStatus status(WorkerRoutes routes) {
        return routes.status(role, scheduler.waiting(), scheduler.running(), scheduler.aborts(),
                scheduler.chunksComputed());
    }
}
