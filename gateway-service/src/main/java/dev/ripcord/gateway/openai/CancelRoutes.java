package dev.ripcord.gateway.openai;

import java.util.Map;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.auth.AuthProperties;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.relay.CancelRelay;
import dev.ripcord.gateway.relay.CancelRelayConfiguration;
import dev.ripcord.protocol.RequestIds;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpStatus;
import org.springframework.web.reactive.function.server.HandlerFunction;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * {@code POST /v1/requests/{id}/cancel} (and {@code DELETE /v1/requests/{id}}, its alias): an explicit cancel, by
 * the request's owner only, whichever gateway receives it.
 *
 * <ul>
 *   <li>In flight at this gateway and started with the caller's API key: cancelled here, 200 at once.</li>
 *   <li>Otherwise, with the {@linkplain CancelRelay cancel relay} (Kafka propagation on, relay enabled): relayed to
 *       the other gateways; the one holding it for the caller cancels it and acknowledges, and the answer is 200
 *       ({@code "status":"cancelled"}) as soon as it does.</li>
 *   <li>Nobody cancelled it (unknown, finished, or another key's, here or elsewhere): 404, exactly as for an unknown
 *       ID. With the relay, every such answer is given a fixed delay (the relay's answer timeout) after the cancel
 *       arrived, whether or not the ID exists anywhere, so a caller learns nothing about other keys' requests from the
 *       status or the timing. With {@code ripcord.gateway.auth.forward-unknown-cancels} (and Kafka), an ID that no
 *       gateway holds is forwarded on the cancellations topic instead (202, {@code "status":"forwarded"}); one that
 *       a gateway holds for another key never is.</li>
 * </ul>
 */
@Configuration(proxyBeanMethods = false)
public class CancelRoutes {

    @Bean
    RouterFunction<ServerResponse> cancelRouter(RequestContexts contexts, AuthProperties auth,
                                                CancelRelayConfiguration.CancelRelayHolder relay) {
        HandlerFunction<ServerResponse> cancel = request -> cancel(request.pathVariable("id"),
                ApiKeys.identity(request.exchange()), contexts, auth, relay.get().orElse(null));
        return RouterFunctions.route()
                .POST("/v1/requests/{id}/cancel", cancel)
                .DELETE("/v1/requests/{id}", cancel)
                .build();
    }

    private static Mono<ServerResponse> cancel(String id, String caller, RequestContexts contexts, AuthProperties auth,
                                               CancelRelay relay) {
        if (!RequestIds.isValid(id)) {
            return Mono.error(ApiException.of(ErrorCode.INVALID_REQUEST_ID, "id",
                    "request ids are 1-128 characters of [A-Za-z0-9._:-]"));
        }
        if (contexts.cancel(id, caller, CancelReason.CLIENT_CANCEL).isPresent()) {
            return ServerResponse.ok().bodyValue(body(id, "cancelled"));
        }
        // In flight here under another key: the same 404 as an unknown ID, at the same time, and never forwarded.
        boolean heldHereForAnother = contexts.isLive(id);
        if (relay == null) {
            return heldHereForAnother ? notFound(id) : forwardOrNotFound(id, contexts, auth);
        }
        if (heldHereForAnother) {
            return Mono.delay(relay.answerTimeout()).then(notFound(id));
        }
        return relay.ask(id, caller).flatMap(answer -> switch (answer) {
            case CANCELLED -> ServerResponse.ok().bodyValue(body(id, "cancelled"));
            case REFUSED -> notFound(id);
            case NO_ANSWER -> forwardOrNotFound(id, contexts, auth);
        });
    }

    private static Mono<ServerResponse> forwardOrNotFound(String id, RequestContexts contexts, AuthProperties auth) {
        if (auth.forwardUnknownCancels() && contexts.publish(id, CancelReason.CLIENT_CANCEL)) {
            return ServerResponse.status(HttpStatus.ACCEPTED).bodyValue(body(id, "forwarded"));
        }
        return notFound(id);
    }

    private static Mono<ServerResponse> notFound(String id) {
        return Mono.error(ApiException.of(ErrorCode.REQUEST_NOT_FOUND, "id", "no request %s is in flight", id));
    }

    private static Map<String, String> body(String id, String status) {
        return Map.of("id", id, "object", "request.cancel", "status", status);
    }
}
