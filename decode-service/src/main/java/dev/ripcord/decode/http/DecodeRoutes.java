package dev.ripcord.decode.http;

import dev.ripcord.cancel.DuplicateRegistrationException;
import dev.ripcord.cancel.RequestIds;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.decode.DecodeProperties;
import dev.ripcord.decode.scheduler.DecodeScheduler;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.http.WorkerRoutes;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * The decode worker's internal HTTP API: {@code POST /internal/v1/decode}, whose response is the job's event
 * stream (RESERVED, then tokens), on top of the routes every worker has ({@link WorkerRoutes}).
 */
@Configuration(proxyBeanMethods = false)
public class DecodeRoutes {

    @Bean
    RouterFunction<ServerResponse> decodeRouter(DecodeScheduler scheduler, WorkerContext context,
                                                CancelProperties cancel, DecodeProperties properties) {
        WorkerRoutes routes = new WorkerRoutes(context, cancel, properties.retryAfter());
        int contextLength = context.engine().config().contextLength();
        return routes.common(() -> routes.status("decode", scheduler.awaitingKv(), scheduler.running(),
                        scheduler.aborts(), 0))
                .POST(InternalApi.DECODE, request -> decode(request, scheduler, routes, contextLength))
                .build();
    }

    private static Mono<ServerResponse> decode(ServerRequest request, DecodeScheduler scheduler, WorkerRoutes routes,
                                               int context) {
        return request.bodyToMono(DecodeRequest.class).flatMap(body -> {
            if (!RequestIds.isValid(body.requestId()) || body.sampling() == null || body.promptTokens() < 1
                    || body.maxTokens() < 1 || (long) body.promptTokens() + body.maxTokens() > context
                    || !Double.isFinite(body.sampling().temperature()) || body.sampling().temperature() < 0
                    || !Double.isFinite(body.sampling().topP()) || body.sampling().topP() <= 0
                    || body.sampling().topP() > 1) {
                // Nothing was registered or reserved: a bad request leaves nothing behind.
                return routes.badRequest("requestId, sampling (finite temperature >= 0, top_p in (0, 1]), "
                        + "promptTokens >= 1 and maxTokens >= 1 within the context of " + context + " are required");
            }
            return Mono.fromFuture(scheduler.submit(body))
                    .flatMap(job -> routes.stream(job.requestId(), job.events(), DecodeEvent.class))
                    .onErrorResume(DecodeScheduler.NoCapacityException.class,
                            e -> routes.busy(body.requestId(), e.getMessage()))
                    .onErrorResume(DuplicateRegistrationException.class,
                            e -> routes.duplicate(body.requestId(), e));
        }).switchIfEmpty(Mono.defer(() -> routes.badRequest("the body is empty; a DecodeRequest is required")));
    }
}
