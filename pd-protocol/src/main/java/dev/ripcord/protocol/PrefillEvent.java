package dev.ripcord.protocol;

/**
 * One line of prefill's response stream.
 *
 * @param position   {@link Type#QUEUED}: requests ahead of this one
 * @param chunk      {@link Type#CHUNK}: index of the chunk just computed and sent
 * @param tokensDone {@link Type#CHUNK}: prompt tokens whose KV is computed
 * @param firstToken {@link Type#DONE}: the first generated token (also sent to decode with the KV)
 * @param error      {@link Type#ERROR}: what went wrong
 */
public record PrefillEvent(Type type, Integer position, Integer chunk, Integer tokensDone, Integer firstToken,
                           String error) {

    public enum Type { QUEUED, STARTED, CHUNK, DONE, ERROR }

    public static PrefillEvent queued(int position) {
        return new PrefillEvent(Type.QUEUED, position, null, null, null, null);
    }

    public static PrefillEvent started() {
        return new PrefillEvent(Type.STARTED, null, null, null, null, null);
    }

    public static PrefillEvent chunk(int chunk, int tokensDone) {
        return new PrefillEvent(Type.CHUNK, null, chunk, tokensDone, null, null);
    }

    public static PrefillEvent done(int firstToken) {
        return new PrefillEvent(Type.DONE, null, null, null, firstToken, null);
    }

    public static PrefillEvent error(String error) {
        return new PrefillEvent(Type.ERROR, null, null, null, null, error);
    }
}
