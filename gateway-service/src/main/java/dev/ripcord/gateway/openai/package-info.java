/**
 * The OpenAI-compatible HTTP edge of the gateway: {@code POST /v1/completions}, {@code POST /v1/chat/completions}
 * (JSON or server-sent events), {@code GET /v1/models}, the request API ({@code GET /v1/requests[/{id}]},
 * {@code POST /v1/requests/{id}/cancel}) and vLLM's root endpoints ({@code /health}, {@code /version},
 * {@code /tokenize}, {@code /detokenize}).
 *
 * <h2>Seam</h2>
 * This package validates requests into a {@link dev.ripcord.gateway.generation.GenerationRequest} and hands it to a
 * {@link dev.ripcord.gateway.generation.TokenGenerator} (the serving core, in {@code serving}); it turns the tokens
 * that come back into text with {@link dev.ripcord.gateway.generation.TextDeltas}. Cancelling the generator's Flux is
 * the only way this package stops a generation: when the client goes away and when a stop string matches. A
 * generation the core ends because the request was cancelled elsewhere (explicit cancel, deadline) is answered with
 * what it produced, {@code finish_reason: "abort"}.
 *
 * <h2>Errors</h2>
 * This package is the only place that speaks OpenAI errors. Client mistakes found here are {@link
 * dev.ripcord.gateway.openai.ApiException}s with an {@link dev.ripcord.gateway.openai.ErrorCode}; the core's
 * {@link dev.ripcord.gateway.generation.GenerationException}s are mapped by {@code OpenAiErrors}, one table, and
 * rendered by {@code OpenAiErrorHandler} (or as a stream's error event once a stream has started).
 *
 * <h2>Lifecycle</h2>
 * {@link dev.ripcord.gateway.openai.RequestIdFilter} first, for every exchange: the request ID. Then authentication
 * ({@code auth}), then one place: {@code OpenAiHandler} (check headers, read, parse and tokenize, generate, answer).
 *
 * <h2>Chat template</h2>
 * Messages are rendered as ChatML: each message as {@code <|im_start|>ROLE\nCONTENT<|im_end|>\n}, in order, then
 * the generation prompt {@code <|im_start|>assistant\n}. Roles: {@code system}, {@code user}, {@code assistant}.
 * Content is a string, or an array of {@code {"type":"text","text":...}} parts joined with {@code "\n"}. The whole
 * string is tokenized with {@link dev.ripcord.gateway.generation.TextCodec#encode}; whether the markers are special
 * tokens is the codec's business. {@code docs/openai.md} documents the same, with the error codes.
 */
@NullMarked
package dev.ripcord.gateway.openai;

import org.jspecify.annotations.NullMarked;
