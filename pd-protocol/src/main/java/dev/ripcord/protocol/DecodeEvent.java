package dev.ripcord.protocol;

/**
 * One line of decode's response stream. Which fields are set depends on {@link #type()}.
 *
 * @param transfer     {@link Type#RESERVED}: the serialized receive descriptor prefill must push KV into
 * @param index        {@link Type#TOKEN}: position of the token in the completion, from 0
 * @param token        {@link Type#TOKEN}: the token ID
 * @param finishReason {@link Type#TOKEN}: set on the last token only: {@code stop} (end of sequence) or
 *                     {@code length}
 * @param error        {@link Type#ERROR}: what went wrong
 */
public record DecodeEvent(Type type, String transfer, Integer index, Integer token, String finishReason,
                          String error) {

    public enum Type { RESERVED, TOKEN, ERROR }

    public static DecodeEvent reserved(String transfer) {
        return new DecodeEvent(Type.RESERVED, transfer, null, null, null, null);
    }

    /** A generated token; {@code finishReason} is {@code null} except on the last one. */
    public static DecodeEvent token(int index, int token, String finishReason) {
        return new DecodeEvent(Type.TOKEN, null, index, token, finishReason, null);
    }

    public static DecodeEvent error(String error) {
        return new DecodeEvent(Type.ERROR, null, null, null, null, error);
    }
}
