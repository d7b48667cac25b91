package dev.ripcord.kv.wire;

/**
 * The frames of the Ripcord KV transfer protocol. A connection always runs from a sending agent (client) to a
 * receiving agent (server); session ids on it are the receiver's. See docs/kv-transfer.md, "Wire format".
 *
 * <p>Internal: not part of the library's API.
 */
public enum FrameType {
    /** Both directions, first frame: identity, process, lease. */
    HELLO(1),
    /** Both directions, every heartbeat interval. */
    HEARTBEAT(2),
    /** Sender to receiver: bind session to this connection. */
    ATTACH(3),
    /** Receiver to sender: the session is bound. */
    ATTACHED(4),
    /** Sender to receiver: one piece of a write, followed by its payload bytes. */
    DATA(5),
    /** Sender to receiver: a write already copied into the shared mapping. */
    SHM_WRITTEN(6),
    /** Receiver to sender: a write landed. */
    WRITE_ACK(7),
    /** Sender to receiver: no more writes; total bytes and metadata. */
    COMPLETE(8),
    /** Receiver to sender: verdict COMPLETED. */
    COMPLETED(9),
    /** Either direction: verdict ABORTED, with cause. */
    ABORT(10),
    /** Sender to receiver: the sender's writes for an aborted session have drained. */
    ABORT_ACK(11),
    /** Receiver to sender: a shared region was released; unmap it once unused. */
    REGION_CLOSED(12);

    private static final FrameType[] BY_CODE = new FrameType[16];

    static {
        for (FrameType t : values()) {
            BY_CODE[t.code] = t;
        }
    }

    private final byte code;

    FrameType(int code) {
        this.code = (byte) code;
    }

    byte code() {
        return code;
    }

    /** The frame type with this code, or {@code null} when the code is unknown. */
    public static FrameType of(byte code) {
        return code > 0 && code < BY_CODE.length ? BY_CODE[code] : null;
    }
}
