package dev.ripcord.gateway.openai;

import static org.springframework.web.reactive.function.server.RequestPredicates.path;

import java.util.Set;

import dev.ripcord.gateway.auth.ApiKeys;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.gateway.lifecycle.RequestSummary;
import dev.ripcord.protocol.RequestIds;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.MethodNotAllowedException;
import reactor.core.publisher.Mono;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The request API, a Ripcord extension next to {@link CancelRoutes}: a caller asks about its own requests.
 *
 * <ul>
 *   <li>{@code GET /v1/requests}: the caller's requests in flight at this gateway, oldest first,
 *       {@code {"object":"list","data":[request...]}}.</li>
 *   <li>{@code GET /v1/requests/{id}}: one request, in flight or among the last
 *       {@value RequestContexts#RECENTLY_ENDED} that ended here: its state, phase, prompt tokens, tokens so far,
 *       finish reason and cancel reason once known. Only its owner (the identity of the key that started it) sees it;
 *       anyone else gets the same 404 {@code request_not_found} as for an ID that does not exist.</li>
 * </ul>
 *
 * <p>A request object: {@code {"id","object":"request","model","created","state","phase","prompt_tokens",
 * "completion_tokens","finish_reason","cancel_reason"}} ({@link RequestSummary}). Nothing here blocks: both read
 * the gateway's table of live requests.
 */
@Configuration(proxyBeanMethods = false)
public class RequestRoutes {

    @Bean
    RouterFunction<ServerResponse> requestRouter(RequestContexts contexts) {
        return RouterFunctions.route()
                .GET("/v1/requests", request -> {
                    ObjectNode body = OpenAiJson.MAPPER.createObjectNode();
                    body.put("object", "list");
                    ArrayNode data = body.putArray("data");
                    contexts.inFlight(ApiKeys.identity(request.exchange())).forEach(s -> data.add(json(s)));
                    return ok(body);
                })
                .GET("/v1/requests/{id}", request -> {
                    String id = request.pathVariable("id");
                    if (!RequestIds.isValid(id)) {
                        return Mono.error(ApiException.of(ErrorCode.INVALID_REQUEST_ID, "id",
                                "request ids are 1-128 characters of [A-Za-z0-9._:-]"));
                    }
                    return contexts.find(id, ApiKeys.identity(request.exchange()))
                            .map(summary -> ok(json(summary)))
                            .orElseGet(() -> Mono.error(ApiException.of(ErrorCode.REQUEST_NOT_FOUND, "id",
                                    "no request %s is known at this gateway", id)));
                })
                // the path exists, so a wrong method is a 405 with Allow, not the 404 of an unknown path
                .route(path("/v1/requests"), RequestRoutes::notAllowed)
                .build();
    }

    /** One request object, the same in the list and alone. */
    static ObjectNode json(RequestSummary summary) {
        ObjectNode node = OpenAiJson.MAPPER.createObjectNode();
        node.put("id", summary.requestId());
        node.put("object", "request");
        node.put("model", summary.model());
        node.put("created", summary.created());
        node.put("state", summary.stateName());
        node.put("phase", summary.phase().wireName());
        node.put("prompt_tokens", summary.promptTokens());
        node.put("completion_tokens", summary.completionTokens());
        node.put("finish_reason", summary.finishReason());
        node.put("cancel_reason", summary.cancelReasonName());
        return node;
    }

    private static Mono<ServerResponse> ok(ObjectNode body) {
        byte[] bytes = OpenAiJson.bytes(body);
        return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(bytes);
    }

    private static Mono<ServerResponse> notAllowed(ServerRequest request) {
        return Mono.error(new MethodNotAllowedException(request.method(), Set.of(HttpMethod.GET)));
    }
}
