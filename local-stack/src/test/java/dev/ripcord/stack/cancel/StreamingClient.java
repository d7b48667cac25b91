package dev.ripcord.stack.cancel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.stack.TestCredentials;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * A non-blocking client of the gateway's {@code /v1/completions} whose requests can be <em>abandoned</em> the way a
 * real client abandons them: {@link Call#disconnect()} closes the connection, whether the response headers have
 * arrived yet or not. That is the signal the gateway must turn into a cancel on every leg.
 *
 * <p>Design note: {@code java.net.http} closes an HTTP/1.1 connection when its exchange is cancelled before the
 * headers ({@code cancel(true)} on the future of {@code sendAsync}), and when the body subscriber cancels its
 * subscription afterwards; a connection whose exchange was abandoned is never returned to the pool. Both are done,
 * so a disconnect is a disconnect at any moment. The gateway sends no byte of a stream before the first token, so
 * during prefill only the first applies.
 *
 * <p>Thread-safe; one client serves any number of concurrent calls.
 */
public final class StreamingClient {

    static final ObjectMapper JSON = JsonMapper.builder().build();

    private final URI gateway;
    private final String apiKey;
    private final HttpClient http;

    /** A client of the gateway at {@code gateway} sending the API key of the stack there ({@link TestCredentials}). */
    public StreamingClient(URI gateway) {
        this(gateway, TestCredentials.apiKey(gateway));
    }

    /** A client sending {@code apiKey} as {@code Authorization: Bearer}; none if null. */
    public StreamingClient(URI gateway, String apiKey) {
        this.gateway = gateway;
        this.apiKey = apiKey;
        // HTTP/1.1: one connection per exchange, so closing it is unambiguous (no h2c upgrade, no multiplexing).
        this.http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
    }

    public URI gateway() {
        return gateway;
    }

    /** A greedy {@code /v1/completions} body with {@code ignore_eos}, so the output length is {@code maxTokens}. */
    public static ObjectNode completion(String model, String prompt, int maxTokens, boolean stream) {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", model);
        body.put("prompt", prompt);
        body.put("max_tokens", maxTokens);
        body.put("temperature", 0);
        body.put("ignore_eos", true);
        body.put("stream", stream);
        return body;
    }

    /** {@code body} asking a stream for its usage chunk ({@code stream_options.include_usage}). */
    public static ObjectNode withUsage(ObjectNode body) {
        body.putObject("stream_options").put("include_usage", true);
        return body;
    }

    /**
     * {@code GET /v1/requests/{id}}: the request object ({@code state}, {@code phase}, {@code completion_tokens},
     * ...) as this client's key sees it, or null on 404.
     */
    public JsonNode request(String requestId) {
        HttpRequest request = TestCredentials.withApiKey(
                        HttpRequest.newBuilder(gateway.resolve("/v1/requests/" + requestId)), apiKey)
                .timeout(Duration.ofSeconds(30)).GET().build();
        try {
            HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() == 404) {
                return null;
            }
            if (response.statusCode() != 200) {
                throw new IllegalStateException("GET /v1/requests/" + requestId + ": " + response.statusCode() + " "
                        + response.body());
            }
            return JSON.readTree(response.body());
        } catch (IOException e) {
            throw new UncheckedIOException("GET request " + requestId + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** Starts {@code POST /v1/completions} with {@code X-Request-Id: requestId}; returns at once. */
    public Call start(ObjectNode body, String requestId) {
        Call call = new Call(requestId, body.path("stream").asBoolean(false));
        HttpRequest request = TestCredentials.withApiKey(HttpRequest.newBuilder(gateway.resolve("/v1/completions")),
                        apiKey)
                .timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json")
                .header("X-Request-Id", requestId)
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)))
                .build();
        call.sentNanos = System.nanoTime();
        call.exchange = http.sendAsync(request, info -> {
            call.status = info.statusCode();
            return HttpResponse.BodySubscribers.fromLineSubscriber(call.lines);
        });
        call.exchange.whenComplete((response, error) -> {
            if (error != null) {
                call.finish(error);
            }
        });
        return call;
    }

    /** {@code POST /v1/requests/{id}/cancel}; returns the status (200 cancelled or already ended, 404 unknown). */
    public int cancel(String requestId) {
        return cancel(requestId, "POST");
    }

    /** {@code DELETE /v1/requests/{id}}, the alias of {@link #cancel(String)}; returns the status. */
    public int delete(String requestId) {
        return cancel(requestId, "DELETE");
    }

    private int cancel(String requestId, String method) {
        String path = method.equals("DELETE") ? "/v1/requests/" + requestId : "/v1/requests/" + requestId + "/cancel";
        HttpRequest request = TestCredentials.withApiKey(HttpRequest.newBuilder(gateway.resolve(path)), apiKey)
                .timeout(Duration.ofSeconds(30)).method(method, HttpRequest.BodyPublishers.noBody()).build();
        try {
            return http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            throw new UncheckedIOException(method + " cancel " + requestId + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * One request in flight. Its events are recorded as they arrive; {@link #outcome()} completes when the answer
     * ended, for whatever reason (finished, error, disconnected by us, connection lost).
     */
    public static final class Call {

        private final String requestId;
        private final boolean stream;
        private final StringBuilder text = new StringBuilder();
        private final StringBuilder rawBody = new StringBuilder();
        private final CompletableFuture<Void> firstText = new CompletableFuture<>();
        private final CompletableFuture<Outcome> outcome = new CompletableFuture<>();
        private final AtomicBoolean disconnected = new AtomicBoolean();
        private final AtomicReference<Flow.Subscription> subscription = new AtomicReference<>();
        private final Flow.Subscriber<String> lines = new LineSubscriber();
        private volatile CompletableFuture<HttpResponse<Void>> exchange;
        private volatile int status = -1;
        private volatile long sentNanos;
        private volatile long firstTextNanos = -1;
        private volatile long disconnectNanos = -1;
        private int textEvents;
        private final List<Long> textEventNanos = new ArrayList<>();
        private String finishReason;
        private int completionTokens = -1;
        private int promptTokens = -1;
        private int cachedTokens = -1;
        private String error;
        private boolean sawDone;
        private final List<Waiter> waiters = new ArrayList<>();

        private Call(String requestId, boolean stream) {
            this.requestId = requestId;
            this.stream = stream;
        }

        public String requestId() {
            return requestId;
        }

        /** Completes when the first non-empty piece of text arrives (never, if none does). */
        public CompletableFuture<Void> firstText() {
            return firstText;
        }

        public CompletableFuture<Outcome> outcome() {
            return outcome;
        }

        /** Nanos from sending to the first piece of text, or -1. */
        public long ttftNanos() {
            long first = firstTextNanos;
            return first < 0 ? -1 : first - sentNanos;
        }

        /** Completes once {@code n} stream events with text have arrived (never, if fewer do). */
        public synchronized CompletableFuture<Void> textEvents(int n) {
            CompletableFuture<Void> reached = new CompletableFuture<>();
            if (textEvents >= n) {
                reached.complete(null);
            } else {
                waiters.add(new Waiter(n, reached));
            }
            return reached;
        }

        private record Waiter(int textEvents, CompletableFuture<Void> reached) {
        }

        /**
         * What this call has seen so far, for a report about a call that got no (complete) answer: the status, the
         * stream events with text, the body's bytes, the finish reason, whether {@code [DONE]} came, and whether it
         * ended or we disconnected.
         */
        public synchronized String describe() {
            return "status " + status + ", text events " + textEvents + ", body chars " + rawBody.length()
                    + ", finish " + finishReason + ", [DONE] " + sawDone + ", ended " + outcome.isDone()
                    + ", disconnected " + disconnected.get() + (error == null ? "" : ", error " + error);
        }

        /** {@code usage.prompt_tokens} of the answer, or -1 when no usage came (yet). */
        public synchronized int promptTokens() {
            return promptTokens;
        }

        /**
         * {@code usage.prompt_tokens_details.cached_tokens} of the answer (prompt tokens the server took from its
         * prefix cache), or -1 when no usage came (yet) or it did not say.
         */
        public synchronized int cachedTokens() {
            return cachedTokens;
        }

        /** Stream events with text received so far. */
        public synchronized int textEvents() {
            return textEvents;
        }

        /** {@link System#nanoTime()} of sending the request. */
        public long sentNanos() {
            return sentNanos;
        }

        /** {@link System#nanoTime()} at which each stream event with text arrived, in order. */
        public synchronized long[] textEventNanos() {
            return textEventNanos.stream().mapToLong(Long::longValue).toArray();
        }

        /** {@link System#nanoTime()} of {@link #disconnect()}, or -1. */
        public long disconnectNanos() {
            return disconnectNanos;
        }

        /**
         * Closes the connection, as a client that goes away does. Returns true if the answer had not ended yet (the
         * disconnect may still race with its last bytes; {@link Outcome#disconnected()} says which happened).
         */
        public boolean disconnect() {
            if (outcome.isDone() || !disconnected.compareAndSet(false, true)) {
                return false;
            }
            disconnectNanos = System.nanoTime();
            Flow.Subscription s = subscription.get();
            if (s != null) {
                s.cancel();
            }
            exchange.cancel(true);
            finish(null);
            return true;
        }

        private synchronized void onLine(String line) {
            rawBody.append(line).append('\n');
            if (!stream || status != 200 || !line.startsWith("data: ")) {
                return;
            }
            String data = line.substring("data: ".length());
            if (sawDone) {
                // [DONE] is the stream's one terminal frame: an event after it (a second [DONE] included) makes the
                // answer a broken one, however it began; an error it had already is kept.
                if (error == null) {
                    error = "{\"error\":{\"code\":\"" + EVENT_AFTER_DONE + "\",\"message\":\"an event after [DONE]\"}}";
                }
                return;
            }
            if (data.equals("[DONE]")) {
                sawDone = true;
                return;
            }
            JsonNode event = JSON.readTree(data);
            if (event.has("error")) {
                error = event.get("error").toString();
                return;
            }
            if (event.path("usage").isObject()) {
                usage(event.path("usage"));
            }
            JsonNode choice = event.path("choices").path(0);
            String piece = choice.path("text").asString("");
            if (!piece.isEmpty()) {
                long now = System.nanoTime();
                textEvents++;
                textEventNanos.add(now);
                text.append(piece);
                // Completed off this thread: a waiter may disconnect, which must not run inside onNext.
                waiters.removeIf(w -> w.textEvents() <= textEvents && w.reached().completeAsync(() -> null) != null);
                if (firstTextNanos < 0) {
                    firstTextNanos = now;
                    firstText.complete(null);
                }
            }
            JsonNode finish = choice.path("finish_reason");
            if (finish.isString()) {
                finishReason = finish.asString();
            }
        }

        private void usage(JsonNode usage) {
            completionTokens = usage.path("completion_tokens").asInt(-1);
            promptTokens = usage.path("prompt_tokens").asInt(-1);
            cachedTokens = usage.path("prompt_tokens_details").path("cached_tokens").asInt(-1);
        }

        private synchronized void finish(Throwable failure) {
            if (outcome.isDone()) {
                return;
            }
            if (!stream && status == 200 && failure == null && !disconnected.get()) {
                JsonNode body = JSON.readTree(rawBody.toString());
                JsonNode choice = body.path("choices").path(0);
                text.append(choice.path("text").asString(""));
                finishReason = choice.path("finish_reason").asString(null);
                usage(body.path("usage"));
                if (!text.isEmpty() && firstTextNanos < 0) {
                    firstTextNanos = System.nanoTime();
                    firstText.complete(null);
                }
            }
            if (status != 200 && status != -1 && error == null) {
                error = rawBody.toString().strip();
            }
            outcome.complete(new Outcome(requestId, status, text.toString(), textEvents, finishReason, error,
                    sawDone, disconnected.get(), failure == null ? null : failure.toString(), completionTokens));
        }

        private final class LineSubscriber implements Flow.Subscriber<String> {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                subscription.set(s);
                if (disconnected.get()) {
                    s.cancel();
                } else {
                    s.request(Long.MAX_VALUE);
                }
            }

            @Override
            public void onNext(String line) {
                onLine(line);
            }

            @Override
            public void onError(Throwable t) {
                finish(t);
            }

            @Override
            public void onComplete() {
                finish(null);
            }
        }
    }

    /**
     * The {@code code} of the error a stream is given when an event follows its {@code [DONE]} (a second
     * {@code [DONE]} included): {@link Outcome#error()} then names it, and the answer is neither completed nor
     * aborted.
     */
    public static final String EVENT_AFTER_DONE = "event_after_done";

    /**
     * How one call ended.
     *
     * @param status        HTTP status, -1 if the headers never arrived (e.g. we disconnected during prefill)
     * @param text          all text received, joined
     * @param textEvents    stream events that carried text
     * @param finishReason  the finish reason, if it arrived
     * @param error         the error body (non-200) or the stream's error event, if any
     * @param sawDone       whether a stream ended with {@code [DONE]}
     * @param disconnected  whether we disconnected before the answer ended
     * @param transportError what the connection failed with, if it failed (our own disconnect included)
     * @param completionTokens {@code usage.completion_tokens} of the answer (a stream's usage chunk, when asked for
     *                       with {@link #withUsage}), or -1 when there was none
     */
    public record Outcome(String requestId, int status, String text, int textEvents, String finishReason,
                          String error, boolean sawDone, boolean disconnected, String transportError,
                          int completionTokens) {

        /**
         * Ended on its own with 200 and a finish reason other than {@code abort} (and, for a stream, {@code [DONE]}):
         * a complete answer.
         */
        public boolean completed() {
            return !disconnected && status == 200 && finishReason != null && !finishReason.equals("abort")
                    && error == null;
        }

        /**
         * Answered as a cancelled request is: 200, {@code finish_reason: "abort"}, no error (and, for a stream,
         * {@code [DONE]}); {@link #text()} and {@link #completionTokens()} are what was produced before the cancel.
         */
        public boolean aborted() {
            return !disconnected && status == 200 && "abort".equals(finishReason) && error == null;
        }
    }
}
