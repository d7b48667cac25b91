package dev.ripcord.gateway.lifecycle;

import java.util.Map;

import dev.ripcord.cancel.CancelReason;
import dev.ripcord.cancel.RequestIds;
import dev.ripcord.gateway.openai.ApiException;
import dev.ripcord.gateway.openai.ErrorCode;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpStatus;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * {@code POST /v1/requests/{id}/cancel}: an explicit cancel. A request in flight at this gateway is cancelled
 * here (200). One that is not (it may be in flight at another gateway) is forwarded on the cancellations topic
 * (202) when Kafka propagation is on, else 404.
 */
@Configuration(proxyBeanMethods = false)
public class CancelRoutes {

    @Bean
    RouterFunction<ServerResponse> cancelRouter(RequestContexts contexts) {
        return RouterFunctions.route()
                .POST("/v1/requests/{id}/cancel", request -> {
                    String id = request.pathVariable("id");
                    if (!RequestIds.isValid(id)) {
                        return Mono.error(ApiException.of(ErrorCode.INVALID_REQUEST_ID, "id",
                                "request ids are 1-128 characters of [A-Za-z0-9._:-]"));
                    }
                    if (contexts.cancel(id, CancelReason.CLIENT_CANCEL).isPresent()) {
                        return ServerResponse.ok().bodyValue(body(id, "cancelled"));
                    }
                    if (contexts.publish(id, CancelReason.CLIENT_CANCEL)) {
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
