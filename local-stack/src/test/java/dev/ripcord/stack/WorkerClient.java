package dev.ripcord.stack;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.protocol.WorkerStatus;

/**
 * A client of the workers' internal API, bypassing the gateway: their {@link WorkerStatus}, and a whole
 * disaggregated request driven by hand exactly as the gateway drives it (decode first to reserve KV, then prefill
 * into the descriptor decode returned, then decode's token stream), to measure what the gateway adds.
 */
public final class WorkerClient {

    private final URI prefill;
    private final URI decode;
    private final String internalToken;
    private final HttpClient http;

    /** A client of these workers sending the internal token of their stack ({@link TestCredentials}). */
    public WorkerClient(URI prefill, URI decode) {
        this(prefill, decode, TestCredentials.internalToken(prefill));
    }

    /** A client sending {@code internalToken} on every call; none if null. */
    public WorkerClient(URI prefill, URI decode, String internalToken) {
        this.prefill = prefill;
        this.decode = decode;
        this.internalToken = internalToken;
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5)).build();
    }

    /** {@code GET /internal/v1/status} of the prefill or decode worker. */
    public WorkerStatus status(Role role) {
        URI base = switch (role) {
            case PREFILL -> prefill;
            case DECODE -> decode;
            case GATEWAY -> throw new IllegalArgumentException("the gateway has no worker status");
        };
        HttpRequest request = TestCredentials.withInternalToken(HttpRequest.newBuilder(base.resolve(InternalApi.STATUS)),
                internalToken).timeout(Duration.ofSeconds(10)).GET().build();
        HttpResponse<byte[]> response = send(request, HttpResponse.BodyHandlers.ofByteArray());
        if (response.statusCode() != 200) {
            throw new AssertionError(role.shortName() + " status answered " + response.statusCode());
        }
        return GatewayClient.JSON.readValue(response.body(), WorkerStatus.class);
    }

    /**
     * One request straight to the workers: {@code POST decode} until RESERVED, {@code POST prefill} with that
     * descriptor (its stream is read to the end on another thread: closing it early would cancel the prefill),
     * then decode's tokens until the one with a finish reason.
     *
     * @throws AssertionError if either worker answers anything but the expected events
     */
    public Direct generate(String requestId, int[] promptTokens, int maxTokens, Sampling sampling, boolean ignoreEos) {
        long start = System.nanoTime();
        HttpResponse<Stream<String>> decodeResponse = send(post(decode, InternalApi.DECODE, requestId,
                new DecodeRequest(requestId, promptTokens.length, maxTokens, sampling, ignoreEos)),
                HttpResponse.BodyHandlers.ofLines());
        try (Stream<String> decodeLines = decodeResponse.body()) {
            Iterator<String> lines = decodeLines.iterator();
            if (decodeResponse.statusCode() != 200) {
                throw new AssertionError("decode answered " + decodeResponse.statusCode() + ": "
                        + (lines.hasNext() ? lines.next() : ""));
            }
            DecodeEvent first = next(lines, DecodeEvent.class);
            if (!(first instanceof DecodeEvent.Reserved reserved)) {
                throw new AssertionError("decode's first event is not RESERVED: " + first);
            }
            CompletableFuture<List<PrefillEvent>> prefillEvents = CompletableFuture.supplyAsync(
                    () -> prefill(requestId, promptTokens, sampling, reserved.transfer()),
                    Thread::startVirtualThread);
            List<Integer> tokens = new ArrayList<>();
            long firstToken = -1;
            String finish = null;
            while (finish == null) {
                DecodeEvent next = next(lines, DecodeEvent.class);
                if (!(next instanceof DecodeEvent.Token event)) {
                    throw new AssertionError("decode sent " + next + " after " + tokens.size() + " tokens");
                }
                if (firstToken < 0) {
                    firstToken = System.nanoTime();
                }
                if (event.index() != tokens.size()) {
                    throw new AssertionError("token index " + event.index() + " where " + tokens.size() + " was due");
                }
                tokens.add(event.token());
                finish = event.finishReason();
            }
            long end = System.nanoTime();
            List<PrefillEvent> prefillLog = prefillEvents.join();
            if (prefillLog.isEmpty() || !(prefillLog.getLast() instanceof PrefillEvent.Done)) {
                throw new AssertionError("prefill did not end with DONE: " + prefillLog);
            }
            return new Direct(tokens.stream().mapToInt(Integer::intValue).toArray(), finish, firstToken - start,
                    end - start);
        }
    }

    private List<PrefillEvent> prefill(String requestId, int[] tokens, Sampling sampling, String transfer) {
        HttpResponse<Stream<String>> response = send(post(prefill, InternalApi.PREFILL, requestId,
                new PrefillRequest(requestId, tokens, sampling, transfer)), HttpResponse.BodyHandlers.ofLines());
        try (Stream<String> lines = response.body()) {
            List<String> all = lines.toList();
            if (response.statusCode() != 200) {
                throw new AssertionError("prefill answered " + response.statusCode() + ": " + all);
            }
            return all.stream().filter(l -> !l.isBlank())
                    .map(l -> GatewayClient.JSON.readValue(l, PrefillEvent.class)).toList();
        }
    }

    private HttpRequest post(URI base, String path, String requestId, Object body) {
        return TestCredentials.withInternalToken(HttpRequest.newBuilder(base.resolve(path)), internalToken)
                .timeout(Duration.ofMinutes(5))
                .header(RequestIds.HEADER, requestId)
                .header("Content-Type", "application/json")
                .header("Accept", InternalApi.NDJSON)
                .POST(HttpRequest.BodyPublishers.ofByteArray(GatewayClient.JSON.writeValueAsBytes(body)))
                .build();
    }

    private static <T> T next(Iterator<String> lines, Class<T> type) {
        while (lines.hasNext()) {
            String line = lines.next();
            if (!line.isBlank()) {
                return GatewayClient.JSON.readValue(line, type);
            }
        }
        throw new AssertionError("stream ended early");
    }

    private <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler) {
        try {
            return http.send(request, handler);
        } catch (IOException e) {
            throw new UncheckedIOException(request.method() + " " + request.uri() + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * A request served straight by the workers.
     *
     * @param tokens         the generated tokens, in order
     * @param finishReason   the last token's finish reason
     * @param firstTokenNanos decode request sent to first token received
     * @param totalNanos     decode request sent to last token received
     */
    public record Direct(int[] tokens, String finishReason, long firstTokenNanos, long totalNanos) {
    }
}
