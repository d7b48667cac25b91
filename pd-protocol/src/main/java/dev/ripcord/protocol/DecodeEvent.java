package dev.ripcord.protocol;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import com.fasterxml.jackson.annotation.JsonTypeName;

/**
 * One line of decode's response stream, named on the wire by its {@code type} field: {@code RESERVED}, then
 * {@code TOKEN}s (the last with its finish reason); or an early end with exactly one {@link Cancelled} or
 * {@link Failed}; then the stream ends.
 */
@JsonTypeInfo(use = JsonTypeInfo.Id.NAME, include = JsonTypeInfo.As.PROPERTY, property = "type")
@JsonSubTypes({
        @JsonSubTypes.Type(value = DecodeEvent.Reserved.class, name = "RESERVED"),
        @JsonSubTypes.Type(value = DecodeEvent.Token.class, name = "TOKEN"),
        @JsonSubTypes.Type(value = Cancelled.class, name = "CANCELLED"),
        @JsonSubTypes.Type(value = Failed.class, name = "FAILED")})
public sealed interface DecodeEvent permits DecodeEvent.Reserved, DecodeEvent.Token, Cancelled, Failed {

    /**
     * KV pages are reserved; {@code transfer} is the serialized receive descriptor prefill must push KV into, and
     * {@code pairing} the decode worker's model and numeric definition, which the prefill worker must share (null
     * from a worker that does not say: then nothing is checked).
     */
    @JsonTypeName("RESERVED")
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Reserved(String transfer, Pairing pairing) implements DecodeEvent {

        public Reserved(String transfer) {
            this(transfer, null);
        }
    }

    /**
     * A generated token at position {@code index} (from 0); {@code finishReason} is set on the last one only:
     * {@code stop} (end of sequence, or one of the request's stop token ids) or {@code length}. {@code logprobs}
     * only when the request's sampling asked for them, else null (and absent on the wire).
     */
    @JsonTypeName("TOKEN")
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Token(int index, int token, String finishReason, Logprobs logprobs) implements DecodeEvent {

        public Token(int index, int token, String finishReason) {
            this(index, token, finishReason, null);
        }
    }
}
