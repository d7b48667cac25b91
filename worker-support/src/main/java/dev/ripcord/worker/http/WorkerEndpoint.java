package dev.ripcord.worker.http;

import java.time.Duration;

import dev.ripcord.protocol.WorkerStatus;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * A worker's own part of the internal HTTP API: its submit route and its status figures. Everything else (status,
 * journal, in-band cancel, the job stream, 400/409/503) is {@link WorkerRoutes}', which serves the one endpoint bean
 * a worker declares.
 */
public interface WorkerEndpoint {

    /** {@code prefill} or {@code decode}. */
    String role();

    /** Where jobs are submitted, e.g. {@code /internal/v1/prefill}. */
    String submitPath();

    /** What {@code Retry-After} says when the worker refuses for lack of room. */
    Duration retryAfter();

    /** Validates, submits and answers with the job's stream ({@link WorkerRoutes#stream}) or a refusal. */
    Mono<ServerResponse> submit(ServerRequest request, WorkerRoutes routes);

    /** The worker's status ({@link WorkerRoutes#status} fills in what every worker has). */
    WorkerStatus status(WorkerRoutes routes);
}
