package dev.ripcord.kv.agent;

import dev.ripcord.kv.AbortReason;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The receive sessions this agent released after a request's cancel, remembered so that a sender that attaches
 * late learns the cancel instead of "no live session".
 *
 * <p>Why: a receiver that aborts a session its sender has not attached yet has no connection to send the ABORT on,
 * and such a session releases at once (nothing to drain). The sender's ATTACH then finds no session. Answering it
 * with {@link AbortReason.Cause#UNKNOWN_SESSION} would lose the cancel: the sender's futures would fail as for a
 * stale descriptor, and its job would end failed, not cancelled. With this memory the late ATTACH is refused with the
 * session's own abort reason, the typed cancel included ({@link AbortReason#cancellation()}).
 *
 * <p>Bounded: the last {@value #CAPACITY} such sessions (an entry is a few dozen bytes); an older one is answered
 * UNKNOWN_SESSION, as before. Only a sender that presents the session's attach token learns the reason. Thread-safe.
 */
final class CancelledSessions {

    static final int CAPACITY = 4096;

    private record Remembered(long attachToken, AbortReason reason) {
    }

    private final Map<Long, Remembered> entries = new LinkedHashMap<>(64, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Remembered> eldest) {
            return size() > CAPACITY;
        }
    };

    /** Session {@code sessionId} was released after {@code reason}; remembered only if the reason is a cancel. */
    synchronized void released(long sessionId, long attachToken, AbortReason reason) {
        if (reason != null && reason.cancellation().isPresent()) {
            entries.put(sessionId, new Remembered(attachToken, reason));
        }
    }

    /** Why session {@code sessionId} ended, for a sender presenting {@code attachToken}; null if not remembered. */
    synchronized AbortReason refusal(long sessionId, long attachToken) {
        Remembered e = entries.get(sessionId);
        return e != null && e.attachToken() == attachToken ? e.reason() : null;
    }
}
