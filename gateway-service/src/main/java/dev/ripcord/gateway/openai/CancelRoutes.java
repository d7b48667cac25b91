package dev.ripcord.gateway.openai;

import java.util.Map;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.auth.AuthProperties;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.protocol.RequestIds;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpStatus;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * {@code POST /v1/requests/{id}/cancel}: an explicit cancel, by the request's owner only. A request in flight at
 * this gateway and started with the caller's API key is cancelled here (200). One started with another key gets 404,
 * exactly as an unknown ID does, so a caller learns nothing about other keys' requests. One that is not in flight
 * here (it may be at another gateway, or not have arrived yet) is forwarded on the cancellations topic (202) when
 * {@code ripcord.gateway.auth.forward-unknown-cancels} is on and Kafka propagation is on, else 404: the gateway
 * cannot check who owns a request it does not hold, so forwarding is off by default.
 */
@Configuration(proxyBeanMethods = false)
public class CancelRoutes {

    @Bean
    RouterFunction<ServerResponse> cancelRouter(RequestContexts contexts, AuthProperties auth) {
        return RouterFunctions.route()
                .POST("/v1/requests/{id}/cancel", request -> {
                    String id = request.pathVariable("id");
                    if (!RequestIds.isValid(id)) {
                        return Mono.error(ApiException.of(ErrorCode.INVALID_REQUEST_ID, "id",
                                "request ids are 1-128 characters of [A-Za-z0-9._:-]"));
                    }
                    String caller = ApiKeys.identity(request.exchange());
                    if (contexts.cancel(id, caller, CancelReason.CLIENT_CANCEL).isPresent()) {
                        return ServerResponse.ok().bodyValue(body(id, "cancelled"));
                    }
                    // In flight here under another key: the same 404 as an unknown ID, and never forwarded.
                    if (!contexts.isLive(id) && auth.forwardUnknownCancels()
                            && contexts.publish(id, CancelReason.CLIENT_CANCEL)) {
                        return ServerResponse.status(HttpStatus.ACCEPTED).bodyValue(body(id, "forwarded"));
                    }
                    return Mono.error(ApiException.of(ErrorCode.REQUEST_NOT_FOUND, "id",
                            "no request %s is in flight at this gateway", id));
                })
                .build();
    }

    private static Map<String, String> body(String id, String status) {
        return Map.of("id", id, "object", "request.cancel", "status", status);
    }
}
