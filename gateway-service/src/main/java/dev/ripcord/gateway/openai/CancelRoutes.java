package dev.ripcord.gateway.openai;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.lifecycle.RequestContext;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.lifecycle.RequestSummary;
import dev.ripcord.gateway.relay.CancelRelay;
import dev.ripcord.gateway.relay.CancelRelayConfiguration;
import dev.ripcord.protocol.RequestIds;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.reactive.function.server.HandlerFunction;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * {@code POST /v1/requests/{id}/cancel} (and {@code DELETE /v1/requests/{id}}, its alias): an explicit cancel, by
 * the request's owner only, whichever gateway receives it. {@code id} is the client's ID; it is resolved to the live
 * request of the <em>caller's</em> key ({@link RequestContexts}), and the cancel reaches the workers under that
 * request's internal ID only. Another key's request with the same ID is never touched, nor any later request that
 * reuses the ID.
 *
 * <ul>
 *   <li>In flight at this gateway and started with the caller's API key: cancelled here, 200
 *       {@code "status":"cancelled"} at once; or, if it completed (or was cancelled otherwise) just before the cancel
 *       took effect, 200 with what happened instead ({@code "status":"completed"} or {@code "already_cancelled"}).</li>
 *   <li>Otherwise, with the {@linkplain CancelRelay cancel relay} (Kafka propagation on, relay enabled): relayed to
 *       the other gateways; the one holding it for the caller cancels it and acknowledges, and the answer is 200
 *       ({@code "status":"cancelled"}) as soon as it does.</li>
 *   <li>Nobody cancelled it: if the caller's request of that ID ended here recently, 200 with how it ended
 *       ({@code "completed"} or {@code "already_cancelled"}); otherwise (unknown, long ended, or another key's, here
 *       or elsewhere) 404, exactly as for an unknown ID. With the relay, a 404 is given a fixed delay (the relay's
 *       answer timeout) after the cancel arrived, whether or not the ID exists anywhere, so a caller learns nothing
 *       about other keys' requests from the status or the timing. A cancel for an ID that no gateway holds is never
 *       forwarded to the workers: it could only name a client's ID, which the workers do not know requests by.</li>
 * </ul>
 */
@Configuration(proxyBeanMethods = false)
public class CancelRoutes {

    @Bean
    RouterFunction<ServerResponse> cancelRouter(RequestContexts contexts,
                                                CancelRelayConfiguration.CancelRelayHolder relay) {
        HandlerFunction<ServerResponse> cancel = request -> cancel(request.pathVariable("id"),
                ApiKeys.identity(request.exchange()), contexts, relay.get().orElse(null));
        return RouterFunctions.route()
                .POST("/v1/requests/{id}/cancel", cancel)
                .DELETE("/v1/requests/{id}", cancel)
                .build();
    }

    private static Mono<ServerResponse> cancel(String id, String caller, RequestContexts contexts, CancelRelay relay) {
        if (!RequestIds.isValid(id)) {
            return Mono.error(ApiException.of(ErrorCode.INVALID_REQUEST_ID, "id",
                    "request ids are 1-128 characters of [A-Za-z0-9._:-]"));
        }
        Optional<RequestContext> mine = contexts.live(id, caller);
        if (mine.isPresent()) {
            RequestContext ctx = mine.get();
            if (contexts.cancel(ctx, CancelReason.CLIENT_CANCEL)) {
                return ServerResponse.ok().bodyValue(body(id, "cancelled", null));
            }
            // Lost the race: the request completed, or something else cancelled it, first.
            return ended(id, ctx.summary());
        }
        // In flight here under another key: the same 404 as an unknown ID, at the same time.
        boolean heldHereForAnother = contexts.isLive(id);
        if (relay == null) {
            return heldHereForAnother ? notFound(id) : endedOrNotFound(id, caller, contexts);
        }
        if (heldHereForAnother) {
            return Mono.delay(relay.answerTimeout()).then(notFound(id));
        }
        return relay.ask(id, caller).flatMap(answer -> switch (answer) {
            case CANCELLED -> ServerResponse.ok().bodyValue(body(id, "cancelled", null));
            case REFUSED, NO_ANSWER -> endedOrNotFound(id, caller, contexts);
        });
    }

    /** The caller's request ended here recently: what happened to it; else 404. */
    private static Mono<ServerResponse> endedOrNotFound(String id, String caller, RequestContexts contexts) {
        return contexts.find(id, caller).map(summary -> ended(id, summary)).orElseGet(() -> notFound(id));
    }

    private static Mono<ServerResponse> ended(String id, RequestSummary summary) {
        return ServerResponse.ok().bodyValue(body(id,
                summary.state() == RequestContext.State.COMPLETED ? "completed" : "already_cancelled",
                summary.finishReason()));
    }

    private static Mono<ServerResponse> notFound(String id) {
        return Mono.error(ApiException.of(ErrorCode.REQUEST_NOT_FOUND, "id", "no request %s is in flight", id));
    }

    private static Map<String, String> body(String id, String status, String finishReason) {
        Map<String, String> body = new LinkedHashMap<>();
        body.put("id", id);
        body.put("object", "request.cancel");
        body.put("status", status);
        if (finishReason != null) {
            body.put("finish_reason", finishReason);
        }
        return body;
    }
}
