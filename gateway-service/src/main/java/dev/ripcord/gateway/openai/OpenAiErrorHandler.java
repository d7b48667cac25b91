package dev.ripcord.gateway.openai;

import dev.ripcord.cancel.logging.RequestMdc;
import dev.ripcord.gateway.generation.DeadlineExceededException;
import dev.ripcord.gateway.generation.DuplicateRequestIdException;
import dev.ripcord.gateway.generation.GenerationException;
import dev.ripcord.gateway.generation.GenerationFailedException;
import dev.ripcord.gateway.generation.RequestCancelledException;
import dev.ripcord.gateway.generation.WorkerUnavailableException;
import dev.ripcord.protocol.RequestIds;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.Ordered;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpRequest;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.ErrorResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebExceptionHandler;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * Renders every error under {@code /v1/} (and of {@code /tokenize}, {@code /detokenize}) as an OpenAI error body: {@link ApiException}s from the routes and filters,
 * the serving core's {@link GenerationException}s (mapped by {@link #fromGeneration}, the one table), framework
 * errors (404 unknown path, 405, 406, 415, 413) and anything that escaped, which becomes a 500 whose message carries
 * the request id and never a stack trace. Other paths are left to the next handler. The request ID is the one
 * {@link RequestIdFilter} settled; the handler runs outside the filter chain's Reactor context, so it puts the ID in
 * the MDC of its own log lines.
 *
 * <p>Runs before Spring Boot's {@code ErrorWebExceptionHandler} (order -1). Client mistakes are logged at DEBUG;
 * 5xx at WARN, with the stack trace only when the failure is unexpected.
 */
final class OpenAiErrorHandler implements WebExceptionHandler, Ordered {

    /** Ahead of Spring Boot's error handler (-1) and WebFlux's status handler (0). */
    static final int ORDER = -2;

    private static final Logger log = LoggerFactory.getLogger(OpenAiErrorHandler.class);

    @Override
    public int getOrder() {
        return ORDER;
    }

    @Override
    public Mono<Void> handle(ServerWebExchange exchange, Throwable failure) {
        ServerHttpRequest request = exchange.getRequest();
        boolean ambiguousPath = failure instanceof ApiException api && api.errorCode() == ErrorCode.INVALID_PATH;
        if (!ambiguousPath && !isOpenAiPath(request.getPath().pathWithinApplication().value())) {
            return Mono.error(failure);
        }
        String requestId = exchange.getAttribute(RequestIds.EXCHANGE_ATTRIBUTE);
        if (requestId == null) {
            requestId = RequestIds.newId(); // failed before the first filter ran: it still gets an ID to quote
        }
        String id = requestId;
        return RequestMdc.withResult(id, () -> render(exchange, failure, id))
                .contextWrite(Context.of(RequestIds.CONTEXT_KEY, id));
    }

    private Mono<Void> render(ServerWebExchange exchange, Throwable failure, String requestId) {
        ServerHttpRequest request = exchange.getRequest();
        ServerHttpResponse response = exchange.getResponse();
        HttpHeaders headers = response.getHeaders();
        if (isClientGone(failure)) {
            // Not a server error: the client closed the connection while its answer was being written. The
            // generation was cancelled when the write ended (see OpenAiHandler); nobody is left to answer.
            log.info("requestId={} client closed the connection during the response: {}", requestId,
                    failure.toString());
            return Mono.empty();
        }
        ApiException error = toApiException(failure, request, requestId);
        logFailure(error, failure, requestId);
        if (response.isCommitted()) {
            return Mono.error(failure); // too late for a body; the server closes the connection
        }
        headers.remove(HttpHeaders.CONTENT_LENGTH);
        headers.remove(HttpHeaders.CACHE_CONTROL);
        if (failure instanceof ErrorResponse framework && !(failure instanceof ApiException)) {
            headers.putAll(framework.getHeaders()); // e.g. Allow on 405, Accept on 415
        }
        headers.putAll(error.getHeaders());
        headers.set(RequestIds.HEADER, requestId);
        headers.setContentType(MediaType.APPLICATION_JSON);
        response.setStatusCode(error.getStatusCode());
        byte[] body = OpenAiJson.bytes(OpenAiJson.errorBody(error));
        return response.writeWith(Mono.fromSupplier(() -> response.bufferFactory().wrap(body)));
    }

    /** A failure that only says the client's connection went away (Reactor Netty's AbortedException and kin). */
    static boolean isClientGone(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof reactor.netty.channel.AbortedException
                    || t instanceof java.nio.channels.ClosedChannelException) {
                return true;
            }
        }
        return false;
    }

    /** {@code /v1/**} and vLLM's tokenizer endpoints, whose errors are OpenAI-shaped too. */
    static boolean isOpenAiPath(String path) {
        return path.equals("/v1") || path.startsWith("/v1/") || path.equals("/tokenize") || path.equals("/detokenize");
    }

    /** What the client is told about {@code failure}: itself if it is an {@link ApiException}, else a translation. */
    static ApiException toApiException(Throwable failure, @Nullable ServerHttpRequest request, String requestId) {
        if (failure instanceof ApiException api) {
            return api;
        }
        if (failure instanceof GenerationException generation) {
            return fromGeneration(generation);
        }
        if (failure instanceof DataBufferLimitException) {
            return new ApiException(ErrorCode.REQUEST_TOO_LARGE, null, "The request body is too large.", null, failure);
        }
        if (failure instanceof ErrorResponse framework) {
            int status = framework.getStatusCode().value();
            ErrorCode code = ErrorCode.forStatus(status);
            return new ApiException(code, null, frameworkMessage(code, framework, request, requestId), null, failure);
        }
        return new ApiException(ErrorCode.INTERNAL_ERROR, null, internalMessage(requestId), null, failure);
    }

    /**
     * The one table from the serving core's failures to OpenAI errors (status, {@code type}, {@code code},
     * {@code param}, {@code Retry-After}); the message is the core's, which is written to be shown to clients.
     * Exhaustive: a new kind of {@link GenerationException} does not compile until it is mapped here.
     */
    static ApiException fromGeneration(GenerationException failure) {
        return switch (failure) {
            case RequestCancelledException e -> new ApiException(ErrorCode.REQUEST_CANCELLED, null, e.getMessage(),
                    null, e);
            case DeadlineExceededException e -> new ApiException(ErrorCode.TIMEOUT, "timeout", e.getMessage(), null, e);
            case WorkerUnavailableException e -> new ApiException(ErrorCode.SERVICE_UNAVAILABLE, null, e.getMessage(),
                    e.retryAfter(), e);
            case GenerationFailedException e -> new ApiException(ErrorCode.INTERNAL_ERROR, null, e.getMessage(), null,
                    e);
            case DuplicateRequestIdException e -> new ApiException(ErrorCode.DUPLICATE_REQUEST_ID, null,
                    e.getMessage(), null, e);
        };
    }

    private static String frameworkMessage(ErrorCode code, ErrorResponse framework, @Nullable ServerHttpRequest request,
            String requestId) {
        String target = request == null ? "" : request.getMethod().name() + " " + request.getPath().value();
        return switch (code) {
            case UNKNOWN_URL -> "Unknown request URL: " + target + ".";
            case METHOD_NOT_ALLOWED -> "Method not allowed: " + target + "; allowed: "
                    + framework.getHeaders().getFirst(HttpHeaders.ALLOW) + ".";
            case NOT_ACCEPTABLE -> "The Accept header rules out every media type this endpoint produces "
                    + "(application/json, text/event-stream).";
            case UNSUPPORTED_MEDIA_TYPE -> "Unsupported Content-Type; send application/json.";
            case REQUEST_TOO_LARGE -> "The request body is too large.";
            case INTERNAL_ERROR, SERVICE_UNAVAILABLE, TIMEOUT -> internalMessage(requestId);
            default -> "The request could not be processed: " + framework.getStatusCode() + ".";
        };
    }

    private static String internalMessage(String requestId) {
        return "The server had an error while processing your request. Quote request id " + requestId
                + " if you report it.";
    }

    private static void logFailure(ApiException error, Throwable failure, String requestId) {
        int status = error.getStatusCode().value();
        if (status < 500) {
            log.debug("requestId={} rejected status={} code={} param={}: {}", requestId, status,
                    error.errorCode().code(), error.param(), error.message());
        } else if (error.errorCode() == ErrorCode.INTERNAL_ERROR) {
            log.error("requestId={} failed status={}", requestId, status, failure);
        } else {
            log.warn("requestId={} failed status={} code={}: {}", requestId, status, error.errorCode().code(),
                    error.message());
        }
    }
}
