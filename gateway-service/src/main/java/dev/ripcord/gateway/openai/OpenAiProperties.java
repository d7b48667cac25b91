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
 * @param socketSendBuffer the kernel send buffer ({@code SO_SNDBUF}) of every client connection; null (the default)
 *                    leaves the operating system's automatic sizing, which lets one connection whose client does not
 *                    read hold up to {@code net.ipv4.tcp_wmem}'s maximum (4 MiB on Linux) before the gateway sees it
 * @param maxN        the largest {@code n} (choices per request) a client may ask for; each choice is its own
 *                    prefill and decode, so it multiplies the request's cost (default 8)
 */
@ConfigurationProperties("ripcord.gateway.openai")
public record OpenAiProperties(
        @DefaultValue("1MB") DataSize maxBodySize,
        @DefaultValue("1h") Duration maxTimeout,
        @DefaultValue("ripcord") String ownedBy,
        @DefaultValue("60s") Duration streamStallTimeout,
        @Nullable DataSize socketSendBuffer,
        @DefaultValue("8") int maxN) {

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
        if (ownedBy.isBlank()) {
            throw new IllegalArgumentException("ripcord.gateway.openai.owned-by must not be blank");
        }
    }

    /** The defaults, for tests and for wiring without a binder. */
    public static OpenAiProperties defaults() {
        return new OpenAiProperties(DataSize.ofMegabytes(1), Duration.ofHours(1), "ripcord", Duration.ofSeconds(60), null,
                DEFAULT_MAX_N);
    }

    int maxBodyBytes() {
        return (int) maxBodySize.toBytes();
    }
}
