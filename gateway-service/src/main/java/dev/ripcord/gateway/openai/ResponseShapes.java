package dev.ripcord.gateway.openai;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import dev.ripcord.gateway.generation.CachedPromptTokens;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.protocol.Logprobs;
import dev.ripcord.gateway.generation.TextCodec;
import dev.ripcord.gateway.generation.TextDelta;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import dev.ripcord.gateway.generation.GenerationRequest.Kind;

/**
 * The exact OpenAI JSON shapes of one response, streamed or not. Fields appear in OpenAI's order:
 * {@code id, object, created, model, choices[, usage]}.
 *
 * <p>Streams, per {@link TextDelta} (of its choice, {@link TextDelta#choice()}): (chat only, before the choice's
 * first delta) a chunk with {@code delta.role = "assistant"} and empty content; a text chunk if the delta has text
 * ({@code choices[0].text} for completions, {@code delta.content} for chat); and on the choice's last delta a chunk
 * with {@code finish_reason} and empty text / empty delta. Then, if asked for, a usage chunk with empty
 * {@code choices}; then {@code [DONE]}. With {@code include_usage} every other chunk carries {@code "usage": null},
 * as OpenAI's do; with {@code continuous_usage_stats} it carries the usage so far instead.
 *
 * <p>Logprobs, when asked for, ride on the chunk that carries the delta's text (or its finish chunk when it has
 * none), for the tokens the delta covers: completions in the legacy shape ({@code tokens, token_logprobs,
 * top_logprobs, text_offset}), chat in {@code {"content":[{token, logprob, bytes, top_logprobs}]}}. A token whose
 * bytes are not complete UTF-8 is named {@code bytes:\xNN...}, as vLLM names it.
 *
 * <p>One instance per response; the stream methods keep state and expect serial calls.
 */
final class ResponseShapes {

    /** vLLM's stand-in for a log-probability of minus infinity, which JSON cannot carry. */
    private static final double NEGATIVE_INFINITY_LOGPROB = -9999.0;

    private final GenerationRequest request;
    private final long created;
    private final @Nullable TextCodec codec;
    private final CachedPromptTokens cached;
    private final Choice[] choices;
    private boolean started;

    ResponseShapes(GenerationRequest request, long created) {
        this(request, created, null, new CachedPromptTokens());
    }

    /**
     * @param codec  names the tokens of logprobs; needed only when the request asks for them
     * @param cached the prompt tokens the prefill worker's cache served, read when the usage is written
     */
    ResponseShapes(GenerationRequest request, long created, @Nullable TextCodec codec, CachedPromptTokens cached) {
        this.request = request;
        this.created = created;
        this.codec = codec;
        this.cached = cached;
        this.choices = new Choice[request.n()];
        for (int i = 0; i < choices.length; i++) {
            choices[i] = new Choice();
        }
    }

    /** What one choice has said so far. */
    private static final class Choice {
        boolean roleSent;
        int completionTokens;
        int previousToken = -1;
        int textOffset;
    }

    // --- streaming ----------------------------------------------------------------------------------------------

    /**
     * The SSE events for one delta, as one write: one element per delta keeps the writer's backpressure intact,
     * so a generator error can never overtake text generated before it.
     */
    byte[] events(TextDelta delta) {
        started = true;
        Choice choice = choices[delta.choice()];
        choice.completionTokens = delta.completionTokens();
        List<byte[]> events = new ArrayList<>(3);
        if (request.kind() == Kind.CHAT && !choice.roleSent) {
            choice.roleSent = true;
            events.add(OpenAiJson.sseEvent(chunk(delta.choice(), null, "", true, null)));
        }
        ObjectNode logprobs = logprobs(choice, delta.tokens());
        if (!delta.text().isEmpty()) {
            events.add(OpenAiJson.sseEvent(chunk(delta.choice(), null, delta.text(), false, logprobs)));
            logprobs = null;
        }
        if (delta.isLast()) {
            events.add(OpenAiJson.sseEvent(chunk(delta.choice(), delta.finishReason(), null, false, logprobs)));
        }
        return concat(events);
    }

    /** What follows the last delta: the usage chunk if asked for, then {@code [DONE]}. */
    byte[] tail() {
        if (!request.includeUsage()) {
            return OpenAiJson.SSE_DONE.clone();
        }
        ObjectNode usageChunk = envelope(chunkObject());
        usageChunk.putArray("choices");
        usage(usageChunk, completionTokens());
        return concat(List.of(OpenAiJson.sseEvent(usageChunk), OpenAiJson.SSE_DONE));
    }

    /** Whether any event went out, i.e. the response is committed and an error can only be reported in-stream. */
    boolean started() {
        return started;
    }

    /** An error after the stream started: an event with the OpenAI error body, then {@code [DONE]}. */
    byte[] errorEvents(ApiException error) {
        return concat(List.of(OpenAiJson.sseEvent(OpenAiJson.errorBody(error)), OpenAiJson.SSE_DONE));
    }

    private static byte[] concat(List<byte[]> events) {
        if (events.size() == 1) {
            return events.getFirst();
        }
        int length = 0;
        for (byte[] event : events) {
            length += event.length;
        }
        byte[] all = new byte[length];
        int at = 0;
        for (byte[] event : events) {
            System.arraycopy(event, 0, all, at, event.length);
            at += event.length;
        }
        return all;
    }

    private ObjectNode chunk(int index, @Nullable String finishReason, @Nullable String text, boolean withRole,
            @Nullable ObjectNode logprobs) {
        ObjectNode chunk = envelope(chunkObject());
        ObjectNode choice = chunk.putArray("choices").addObject();
        if (request.kind() == Kind.CHAT) {
            choice.put("index", index);
            ObjectNode delta = choice.putObject("delta");
            if (withRole) {
                delta.put("role", "assistant");
            }
            if (text != null) {
                delta.put("content", text);
            }
        } else {
            choice.put("text", text == null ? "" : text);
            choice.put("index", index);
        }
        putLogprobs(choice, logprobs);
        putFinishReason(choice, finishReason);
        if (request.continuousUsage()) {
            usage(chunk, completionTokens());
        } else if (request.includeUsage()) {
            chunk.putNull("usage");
        }
        return chunk;
    }

    private String chunkObject() {
        return request.kind() == Kind.CHAT ? "chat.completion.chunk" : "text_completion";
    }

    private int completionTokens() {
        int sum = 0;
        for (Choice choice : choices) {
            sum += choice.completionTokens;
        }
        return sum;
    }

    // --- one body -----------------------------------------------------------------------------------------------

    /** The non-streamed body of a one-choice response: {@code text_completion} or {@code chat.completion}. */
    ObjectNode body(String text, String finishReason, int completionTokens) {
        return body(List.of(new Ending(text, finishReason, completionTokens, List.of())));
    }

    /** How one choice of a non-streamed response ended: its whole text and the tokens it covers. */
    record Ending(String text, String finishReason, int completionTokens, List<GeneratedToken> tokens) {
    }

    /** The non-streamed body, one choice per ending in index order, with the usage of all of them. */
    ObjectNode body(List<Ending> endings) {
        ObjectNode body = envelope(request.kind() == Kind.CHAT ? "chat.completion" : "text_completion");
        ArrayNode array = body.putArray("choices");
        int completionTokens = 0;
        for (int index = 0; index < endings.size(); index++) {
            Ending ending = endings.get(index);
            completionTokens += ending.completionTokens();
            ObjectNode choice = array.addObject();
            if (request.kind() == Kind.CHAT) {
                choice.put("index", index);
                ObjectNode message = choice.putObject("message");
                message.put("role", "assistant");
                message.put("content", ending.text());
            } else {
                choice.put("text", ending.text());
                choice.put("index", index);
            }
            putLogprobs(choice, logprobs(choices[index], ending.tokens()));
            putFinishReason(choice, ending.finishReason());
        }
        usage(body, completionTokens);
        return body;
    }

    private ObjectNode envelope(String object) {
        ObjectNode node = OpenAiJson.MAPPER.createObjectNode();
        node.put("id", request.requestId());
        node.put("object", object);
        node.put("created", created);
        node.put("model", request.model());
        return node;
    }

    private void usage(ObjectNode node, int completionTokens) {
        int promptTokens = request.promptTokens().length;
        ObjectNode usage = node.putObject("usage");
        usage.put("prompt_tokens", promptTokens);
        usage.put("completion_tokens", completionTokens);
        usage.put("total_tokens", promptTokens + completionTokens);
        usage.putObject("prompt_tokens_details").put("cached_tokens", cached.tokens());
    }

    private static void putFinishReason(ObjectNode choice, @Nullable String finishReason) {
        if (finishReason == null) {
            choice.putNull("finish_reason");
        } else {
            choice.put("finish_reason", finishReason);
        }
    }

    private static void putLogprobs(ObjectNode choice, @Nullable ObjectNode logprobs) {
        if (logprobs == null) {
            choice.putNull("logprobs");
        } else {
            choice.set("logprobs", logprobs);
        }
    }

    // --- logprobs -----------------------------------------------------------------------------------------------

    /** The logprobs object for {@code tokens} of {@code choice}, advancing its state; null when not asked for. */
    private @Nullable ObjectNode logprobs(Choice choice, List<GeneratedToken> tokens) {
        if (!request.sampling().wantsLogprobs() || codec == null) {
            return null;
        }
        ObjectNode node = OpenAiJson.MAPPER.createObjectNode();
        if (request.kind() == Kind.CHAT) {
            ArrayNode content = node.putArray("content");
            for (GeneratedToken token : tokens) {
                Logprobs lp = token.logprobs();
                byte[] bytes = codec.tokenBytes(choice.previousToken, token.tokenId());
                ObjectNode entry = content.addObject();
                entry.put("token", tokenString(bytes));
                entry.put("logprob", lp == null ? NEGATIVE_INFINITY_LOGPROB : finite(lp.logprob()));
                putBytes(entry, bytes);
                ArrayNode top = entry.putArray("top_logprobs");
                if (lp != null) {
                    for (int i = 0; i < lp.topTokens().length; i++) {
                        byte[] alternative = codec.tokenBytes(choice.previousToken, lp.topTokens()[i]);
                        ObjectNode t = top.addObject();
                        t.put("token", tokenString(alternative));
                        t.put("logprob", finite(lp.topLogprobs()[i]));
                        putBytes(t, alternative);
                    }
                }
                choice.previousToken = token.tokenId();
            }
            return node;
        }
        ArrayNode strings = node.putArray("tokens");
        ArrayNode values = node.putArray("token_logprobs");
        ArrayNode tops = node.putArray("top_logprobs");
        ArrayNode offsets = node.putArray("text_offset");
        for (GeneratedToken token : tokens) {
            Logprobs lp = token.logprobs();
            String text = tokenString(codec.tokenBytes(choice.previousToken, token.tokenId()));
            strings.add(text);
            values.add(lp == null ? NEGATIVE_INFINITY_LOGPROB : finite(lp.logprob()));
            ObjectNode top = tops.addObject();
            if (lp != null) {
                for (int i = 0; i < lp.topTokens().length; i++) {
                    top.put(tokenString(codec.tokenBytes(choice.previousToken, lp.topTokens()[i])),
                            finite(lp.topLogprobs()[i]));
                }
                if (!top.has(text)) {
                    top.put(text, finite(lp.logprob())); // the sampled token is always listed (OpenAI's rule)
                }
            }
            offsets.add(choice.textOffset);
            choice.textOffset += text.length();
            choice.previousToken = token.tokenId();
        }
        return node;
    }

    private static double finite(float logprob) {
        return Float.isFinite(logprob) ? logprob : NEGATIVE_INFINITY_LOGPROB;
    }

    private static void putBytes(ObjectNode entry, byte[] bytes) {
        ArrayNode array = entry.putArray("bytes");
        for (byte b : bytes) {
            array.add(b & 0xFF);
        }
    }

    /** The token's text, or {@code bytes:\xNN...} when its bytes are not complete UTF-8 on their own. */
    static String tokenString(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            StringBuilder named = new StringBuilder("bytes:");
            for (byte b : bytes) {
                named.append("\\x").append(String.format("%02x", b & 0xFF));
            }
            return named.toString();
        }
    }
}
