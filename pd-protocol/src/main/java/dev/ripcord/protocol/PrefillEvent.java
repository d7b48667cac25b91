package dev.ripcord.protocol;

import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.annotation.JsonTypeName;

/**
 * One line of prefill's response stream, named on the wire by its {@code type} field. A stream is
 * {@code QUEUED, STARTED, CHUNK..., DONE}, or ends early with exactly one {@link Cancelled} (a cancel ended it;
 * it says why, and where prefill learned it) or {@link Failed} (something broke), never both; then the stream
 * ends.
 */
@JsonTypeInfo(use = JsonTypeInfo.Id.NAME, include = JsonTypeInfo.As.PROPERTY, property = "type")
@JsonSubTypes({
        @JsonSubTypes.Type(value = PrefillEvent.Queued.class, name = "QUEUED"),
        @JsonSubTypes.Type(value = PrefillEvent.Started.class, name = "STARTED"),
        @JsonSubTypes.Type(value = PrefillEvent.Chunk.class, name = "CHUNK"),
        @JsonSubTypes.Type(value = PrefillEvent.Done.class, name = "DONE"),
        @JsonSubTypes.Type(value = Cancelled.class, name = "CANCELLED"),
        @JsonSubTypes.Type(value = Failed.class, name = "FAILED")})
public sealed interface PrefillEvent permits PrefillEvent.Queued, PrefillEvent.Started, PrefillEvent.Chunk,
        PrefillEvent.Done, Cancelled, Failed {

    /** Admitted; {@code position} requests are ahead of this one. */
    @JsonTypeName("QUEUED")
    record Queued(int position) implements PrefillEvent {
    }

    /** Prefill began computing this prompt. */
    @JsonTypeName("STARTED")
    record Started() implements PrefillEvent {
    }

    /** Chunk {@code chunk} was computed and its finished pages pushed; {@code tokensDone} prompt tokens have KV. */
    @JsonTypeName("CHUNK")
    record Chunk(int chunk, int tokensDone) implements PrefillEvent {
    }

    /**
     * The KV was delivered to decode, with the first generated token (which decode also got with the KV).
     * {@code cachedTokens} of the prompt's tokens came from the worker's prefix cache instead of being computed
     * (OpenAI's {@code usage.prompt_tokens_details.cached_tokens}); null from a worker that does not say.
     */
    @JsonTypeName("DONE")
    record Done(int firstToken, Integer cachedTokens) implements PrefillEvent {

        /** Nothing came from the cache. */
        public Done(int firstToken) {
            this(firstToken, 0);
        }

        /** {@link #cachedTokens}, 0 when the worker did not say. */
        public int cached() {
            return cachedTokens == null ? 0 : cachedTokens;
        }
    }
}
