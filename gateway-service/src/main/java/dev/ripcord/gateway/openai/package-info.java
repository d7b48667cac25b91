/**
 * The OpenAI-compatible HTTP surface of the gateway: {@code POST /v1/completions}, {@code POST /v1/chat/completions}
 * (JSON or server-sent events) and {@code GET /v1/models}.
 *
 * <h2>Seam</h2>
 * This package validates requests into a {@link dev.ripcord.gateway.openai.GenerationRequest} and hands it to a
 * {@link dev.ripcord.gateway.openai.TokenGenerator} (the serving core, implemented elsewhere); it turns the
 * {@link dev.ripcord.gateway.openai.GeneratedToken}s that come back into text with a
 * {@link dev.ripcord.gateway.openai.TextCodec} (the engine's tokenizer, bound elsewhere). Cancelling the generator's
 * Flux is the only way this package stops a generation: when the client goes away and when a stop string matches.
 * Errors the client should see are {@link dev.ripcord.gateway.openai.ApiException}s with an
 * {@link dev.ripcord.gateway.openai.ErrorCode}.
 *
 * <h2>Lifecycle</h2>
 * One place: {@code OpenAiHandler} (identify, check headers, read, parse and tokenize, generate, answer).
 *
 * <h2>Chat template</h2>
 * Messages are rendered as ChatML: each message as {@code <|im_start|>ROLE\nCONTENT<|im_end|>\n}, in order, then
 * the generation prompt {@code <|im_start|>assistant\n}. Roles: {@code system}, {@code user}, {@code assistant}.
 * Content is a string, or an array of {@code {"type":"text","text":...}} parts joined with {@code "\n"}. The whole
 * string is tokenized with {@link dev.ripcord.gateway.openai.TextCodec#encode}; whether the markers are special
 * tokens is the codec's business. {@code docs/openai.md} documents the same, with the error codes.
 *
 * <h2>Stop strings</h2>
 * Applied by the gateway on detokenized text: text before the earliest match is sent, the generation is cancelled
 * and {@code finish_reason} is {@code stop}. Text that may be the start of a stop string split across tokens is
 * held back until it is decided.
 */
@NullMarked
package dev.ripcord.gateway.openai;

import org.jspecify.annotations.NullMarked;
