package dev.ripcord.gateway.relay;

/**
 * One record on the cancel-relay topic (key: the request ID; value: this record as JSON, {@code schemaVersion} 1).
 *
 * <pre>
 *  kind       sent by                     meaning
 *  REQUEST    the gateway the cancel      "whoever holds {@code requestId} for {@code caller}: cancel it"
 *             reached (from)
 *  CANCELLED  the owning gateway (from)   "cancelled, on behalf of relay {@code relayId}"   (to: the asker)
 *  REFUSED    the gateway holding the     "I hold it, but not for that caller" (to: the asker); the asker
 *             request under another key   answers 404 at its usual time: no one learns from the timing
 * </pre>
 *
 * @param schemaVersion 1
 * @param kind          what the record says
 * @param relayId       one per relayed cancel; a reply names the request it answers
 * @param requestId     the request to cancel
 * @param caller        the caller's identity ({@code key-} + 12 hex digits of its key's SHA-256, or
 *                      {@code anonymous}): never the key
 * @param from          the sending gateway's {@code ripcord.cancel.instance-id}
 * @param to            the asking gateway's instance ID on a reply; null on a request
 * @param timestampMs   when it was sent (epoch milliseconds); a request older than the answer timeout is ignored
 */
public record RelayMessage(int schemaVersion, Kind kind, String relayId, String requestId, String caller,
                           String from, String to, long timestampMs) {

    public enum Kind { REQUEST, CANCELLED, REFUSED }

    static RelayMessage request(String relayId, String requestId, String caller, String from, long now) {
        return new RelayMessage(1, Kind.REQUEST, relayId, requestId, caller, from, null, now);
    }

    RelayMessage reply(Kind kind, String me, long now) {
        return new RelayMessage(1, kind, relayId, requestId, caller, me, from, now);
    }
}
