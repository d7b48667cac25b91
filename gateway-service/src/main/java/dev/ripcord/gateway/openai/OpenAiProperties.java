package dev.ripcord.gateway.openai;

import java.time.Duration;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * {@code ripcord.gateway.openai.*}: limits of the OpenAI-compatible HTTP surface. Defaults work on a laptop.
 *
 * @param maxBodySize largest accepted request body; larger ones get 413 without being parsed (default 1MB)
 * @param maxTimeout  largest per-request deadline a client may ask for with {@code timeout} or
 *                    {@code X-Ripcord-Timeout} (default 1h)
 * @param ownedBy     the {@code owned_by} of the served model in {@code GET /v1/models} (default {@code ripcord})
 * @param streamStallTimeout how long a streaming client may accept no bytes while an event waits for it before the
 *                    gateway cancels the request ({@code CLIENT_STALLED}) and closes the connection (default 60s)
 * @param socketSendBuffer the kernel send buffer ({@code SO_SNDBUF}) of every client connection (default 64KB: a
 *                    few hundred tokens' events). What a client that stops reading can pin in the kernel is bounded
 *                    by it, and its stall is seen once that much is queued; without a cap the operating system sizes
 *                    the buffer itself, up to {@code net.ipv4.tcp_wmem}'s maximum (4 MiB on Linux), in which a whole
 *                    answer fits unseen
 * @param maxN        the largest {@code n} (choices per request) a client may ask for; each choice is its own
 *                    prefill and decode, so it multiplies the request's cost (default 8)
 * @param sseHeartbeat how often a streaming response that has been admitted sends an SSE comment ({@code : ping})
 *                    while it waits for a worker or the model thinks (default 15s): a proxy's idle timeout never cuts
 *                    it, and a client that vanished without closing is found (the bytes back up and the stall
 *                    timeout fires, or the kernel gives up on them)
 * @param keepAlive   the TCP keepalive idle time of client connections (default 30s): a connection silent for this
 *                    long is probed (every third of it, three times) and closed if its peer is gone, which ends its
 *                    request; this is what finds a half-open connection of a non-streaming request
 * @param idleCloseThreshold a client connection that closes after at least this long without a byte from the
 *                    gateway (default 30s) is logged and counted as closed while idle ({@code idle_close}: most
 *                    likely a proxy's or load balancer's idle timeout), not as a client that left
 */
@ConfigurationProperties("ripcord.gateway.openai")
public record OpenAiProperties(
        @DefaultValue("1MB") DataSize maxBodySize,
        @DefaultValue("1h") Duration maxTimeout,
        @DefaultValue("ripcord") String ownedBy,
        @DefaultValue("60s") Duration streamStallTimeout,
        @DefaultValue("64KB") @Nullable DataSize socketSendBuffer,
        @DefaultValue("8") int maxN,
        @DefaultValue("15s") Duration sseHeartbeat,
        @DefaultValue("30s") Duration keepAlive,
        @DefaultValue("30s") Duration idleCloseThreshold) {

    /** The default of {@code max-n}. */
    public static final int DEFAULT_MAX_N = 8;

    public OpenAiProperties {
        if (maxBodySize.toBytes() < 1 || maxBodySize.toBytes() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(
                    "ripcord.gateway.openai.max-body-size must be between 1B and 2GB, got " + maxBodySize);
        }
        if (maxTimeout.isNegative() || maxTimeout.isZero()) {
            throw new IllegalArgumentException("ripcord.gateway.openai.max-timeout must be positive, got " + maxTimeout);
        }
        if (streamStallTimeout.isNegative() || streamStallTimeout.isZero()) {
            throw new IllegalArgumentException(
                    "ripcord.gateway.openai.stream-stall-timeout must be positive, got " + streamStallTimeout);
        }
        if (socketSendBuffer != null && (socketSendBuffer.toBytes() < 1 || socketSendBuffer.toBytes() > Integer.MAX_VALUE)) {
            throw new IllegalArgumentException(
                    "ripcord.gateway.openai.socket-send-buffer must be between 1B and 2GB, got " + socketSendBuffer);
        }
        if (maxN < 1 || maxN > 128) {
            throw new IllegalArgumentException("ripcord.gateway.openai.max-n must be between 1 and 128, got " + maxN);
        }
        for (var d : java.util.List.of(java.util.Map.entry("sse-heartbeat", sseHeartbeat),
                java.util.Map.entry("keep-alive", keepAlive), java.util.Map.entry("idle-close-threshold",
                        idleCloseThreshold))) {
            if (d.getValue().isNegative() || d.getValue().isZero()) {
                throw new IllegalArgumentException("ripcord.gateway.openai." + d.getKey() + " must be positive, got "
                        + d.getValue());
            }
        }
        if (keepAlive.toSeconds() < 1) {
            throw new IllegalArgumentException("ripcord.gateway.openai.keep-alive must be at least 1s, got " + keepAlive);
        }
        if (ownedBy.isBlank()) {
            throw new IllegalArgumentException("ripcord.gateway.openai.owned-by must not be blank");
        }
    }

    /** The defaults, for tests and for wiring without a binder. */
    public static OpenAiProperties defaults() {
        return new OpenAiProperties(DataSize.ofMegabytes(1), Duration.ofHours(1), "ripcord", Duration.ofSeconds(60),
                DataSize.ofKilobytes(64), DEFAULT_MAX_N, Duration.ofSeconds(15), Duration.ofSeconds(30),
                Duration.ofSeconds(30));
    }

    int maxBodyBytes() {
        return (int) maxBodySize.toBytes();
    }
}
