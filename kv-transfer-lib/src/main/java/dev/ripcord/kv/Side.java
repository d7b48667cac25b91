package dev.ripcord.kv;

/** The two ends of a transfer session. */
public enum Side {
    /** The prefill end: pushes bytes. */
    SENDER,
    /** The decode end: owns the destination pages. */
    RECEIVER
}
