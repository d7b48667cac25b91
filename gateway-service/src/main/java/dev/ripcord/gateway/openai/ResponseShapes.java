package dev.ripcord.gateway.openai;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.TextDelta;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.node.ObjectNode;

import dev.ripcord.gateway.generation.GenerationRequest.Kind;

/**
 * The exact OpenAI JSON shapes of one response, streamed or not. Fields appear in OpenAI's order:
 * {@code id, object, created, model, choices[, usage]}.
 *
 * <p>Streams, per {@link TextDelta}: (chat only, before the first delta) a chunk with {@code delta.role =
 * "assistant"} and empty content; a text chunk if the delta has text ({@code choices[0].text} for completions,
 * {@code delta.content} for chat); and on the last delta a chunk with {@code finish_reason} and empty text / empty
 * delta. Then, if asked for, a usage chunk with empty {@code choices}; then {@code [DONE]}. With {@code include_usage}
 * every other chunk carries {@code "usage": null}, as OpenAI's do.
 *
 * <p>One instance per response; the stream methods keep state and expect serial calls.
 */
final class ResponseShapes {

    private final GenerationRequest request;
    private final long created;
    private boolean roleSent;
    private int completionTokens;
    private boolean started;

    ResponseShapes(GenerationRequest request, long created) {
        this.request = request;
        this.created = created;
    }

    // --- streaming ----------------------------------------------------------------------------------------------

    /**
     * The SSE events for one delta, as one write: one element per delta keeps the writer's backpressure intact,
     * so a generator error can never overtake text generated before it.
     */
    byte[] events(TextDelta delta) {
        started = true;
        completionTokens = delta.completionTokens();
        List<byte[]> events = new ArrayList<>(3);
        if (request.kind() == Kind.CHAT && !roleSent) {
            roleSent = true;
            events.add(OpenAiJson.sseEvent(chunk(null, "", true)));
        }
        if (!delta.text().isEmpty()) {
            events.add(OpenAiJson.sseEvent(chunk(null, delta.text(), false)));
        }
        if (delta.isLast()) {
            events.add(OpenAiJson.sseEvent(chunk(delta.finishReason(), null, false)));
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
        usage(usageChunk, completionTokens);
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

    private ObjectNode chunk(@Nullable String finishReason,
            @Nullable String text, boolean withRole) {
        ObjectNode chunk = envelope(chunkObject());
        ObjectNode choice = chunk.putArray("choices").addObject();
        if (request.kind() == Kind.CHAT) {
            choice.put("index", 0);
            ObjectNode delta = choice.putObject("delta");
            if (withRole) {
                delta.put("role", "assistant");
            }
            if (text != null) {
                delta.put("content", text);
            }
            choice.putNull("logprobs");
        } else {
            choice.put("text", text == null ? "" : text);
            choice.put("index", 0);
            choice.putNull("logprobs");
        }
        putFinishReason(choice, finishReason);
        if (request.includeUsage()) {
            chunk.putNull("usage");
        }
        return chunk;
    }

    private String chunkObject() {
        return request.kind() == Kind.CHAT ? "chat.completion.chunk" : "text_completion";
    }

    // --- one body -----------------------------------------------------------------------------------------------

    /** The non-streamed body: {@code text_completion} or {@code chat.completion}, with usage. */
    ObjectNode body(String text, String finishReason, int completionTokens) {
        ObjectNode body = envelope(request.kind() == Kind.CHAT ? "chat.completion" : "text_completion");
        ObjectNode choice = body.putArray("choices").addObject();
        if (request.kind() == Kind.CHAT) {
            choice.put("index", 0);
            ObjectNode message = choice.putObject("message");
            message.put("role", "assistant");
            message.put("content", text);
        } else {
            choice.put("text", text);
            choice.put("index", 0);
        }
        choice.putNull("logprobs");
        putFinishReason(choice, finishReason);
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
    }

    private static void putFinishReason(ObjectNode choice, @Nullable String finishReason) {
        if (finishReason == null) {
            choice.putNull("finish_reason");
        } else {
            choice.put("finish_reason", finishReason);
        }
    }
}
