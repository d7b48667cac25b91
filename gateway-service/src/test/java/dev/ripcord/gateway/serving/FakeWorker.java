package dev.ripcord.gateway.serving;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import io.netty.handler.codec.http.QueryStringDecoder;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;
import reactor.netty.http.server.HttpServerResponse;

/**
 * A scripted stand-in for a prefill or decode worker: a Reactor Netty server on a free loopback port that answers
 * {@code POST /internal/v1/*} as its {@link Script} says, and counts what reached it — calls, the request IDs they
 * carried, and exchanges the gateway closed before the answer was over (the in-band cancel a real worker sees).
 */
final class FakeWorker implements AutoCloseable {

    /** How to answer call number {@code call} (from 1). */
    @FunctionalInterface
    interface Script {
        Publisher<Void> answer(int call, HttpServerResponse response);
    }

    /** How to answer call number {@code call} (from 1), by the request ID it carries (a choice's is {@code ID.i}). */
    @FunctionalInterface
    interface ByRequestId {
        Publisher<Void> answer(String requestId, int call, HttpServerResponse response);
    }

    private final DisposableServer server;
    private final AtomicInteger calls = new AtomicInteger();
    private final AtomicInteger closedByGateway = new AtomicInteger();
    private final List<String> requestIds = new CopyOnWriteArrayList<>();
    private final List<String> bodies = new CopyOnWriteArrayList<>();
    private final List<String> cancels = new CopyOnWriteArrayList<>();
    private volatile ByRequestId script;

    private FakeWorker(ByRequestId script) {
        this.script = script;
        this.server = HttpServer.create().host("127.0.0.1").port(0)
                .route(routes -> routes.post("/internal/v1/requests/{id}/cancel", (request, response) -> {
                    // The gateway's in-band reason: noted with whether the job's stream was still open then.
                    cancels.add(request.param("id") + " " + new QueryStringDecoder(request.uri()).parameters()
                            .get("reason").getFirst() + (closedByGateway.get() == 0 ? " before close" : " after close"));
                    return response.status(200).sendString(Mono.just("ABORTED"));
                }).post("/internal/v1/{leg}", (request, response) -> {
                    String id = request.requestHeaders().get(RequestIds.HEADER);
                    return request.receive().aggregate().asString().defaultIfEmpty("").flatMapMany(body -> {
                        requestIds.add(id);
                        bodies.add(body);
                        int call = calls.incrementAndGet();
                        // Counts a close before the answer completed: what the worker sees as the in-band cancel.
                        Flux<Void> answer = Flux.from(this.script.answer(id, call, response));
                        return answer.doOnCancel(closedByGateway::incrementAndGet);
                    });
                }))
                .bindNow(Duration.ofSeconds(10));
    }

    static FakeWorker start(Script script) {
        return new FakeWorker((id, call, response) -> script.answer(call, response));
    }

    static FakeWorker startByRequestId(ByRequestId script) {
        return new FakeWorker(script);
    }

    /**
     * A URI nothing listens on: connecting is refused. Its port stays bound (not listening, without SO_REUSEADDR)
     * while the JVM runs, so no other socket can take it over and no connect can pick it as its own source port.
     */
    static URI refusingUri() {
        return URI.create("http://127.0.0.1:" + RESERVED_PORT.getLocalPort());
    }

    private static final Socket RESERVED_PORT = reservePort();

    private static Socket reservePort() {
        try {
            Socket socket = new Socket();
            socket.setReuseAddress(false);
            socket.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
            return socket;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    void script(Script next) {
        this.script = (id, call, response) -> next.answer(call, response);
    }

    URI uri() {
        return URI.create("http://127.0.0.1:" + server.port());
    }

    int port() {
        return server.port();
    }

    int calls() {
        return calls.get();
    }

    int closedByGateway() {
        return closedByGateway.get();
    }

    List<String> requestIds() {
        return requestIds;
    }

    /** The bodies of the calls, in order. */
    List<String> bodies() {
        return bodies;
    }

    /** The in-band cancels the gateway sent: "id REASON before close|after close". */
    List<String> cancels() {
        return cancels;
    }

    @Override
    public void close() {
        server.disposeNow(Duration.ofSeconds(10));
    }

    // ------------------------------------------------------------------------------------------ answers

    /** A refusal: {@code status} with {@code Retry-After: 2} and a FAILED event as body, as workers answer. */
    static Script status(int status) {
        return (call, response) -> response.status(status)
                .header("Retry-After", "2")
                .header("Content-Type", "application/json")
                .sendString(Mono.just("{\"type\":\"FAILED\",\"code\":\"busy\",\"message\":\"refused by the fake\"}"));
    }

    /** An NDJSON stream of {@code lines}, each flushed as it comes. */
    static Script stream(Flux<String> lines) {
        return (call, response) -> response.status(200)
                .header("Content-Type", InternalApi.NDJSON)
                .sendString(lines.map(line -> line + "\n"), java.nio.charset.StandardCharsets.UTF_8);
    }

    /** Never answers; the exchange stays open until the gateway closes it. */
    static Script hang() {
        return (call, response) -> Mono.never();
    }

    /** The first {@code n} calls get {@code first}, the rest {@code then}. */
    static Script firstThen(int n, Script first, Script then) {
        return (call, response) -> call <= n ? first.answer(call, response) : then.answer(call, response);
    }

    /** A decode worker that admits and generates {@code tokens} tokens at once (the last one says "length"). */
    static Script decodeGenerating(int tokens) {
        return (call, response) -> stream(decodeLines(tokens)).answer(call, response);
    }

    /** RESERVED followed by {@code tokens} tokens. */
    static Flux<String> decodeLines(int tokens) {
        return Flux.concat(Flux.just(reserved()), Flux.range(0, tokens).map(i -> token(i, i == tokens - 1)));
    }

    /** A prefill worker that queues, starts and finishes at once. */
    static Script prefillDone() {
        return stream(Flux.just("{\"type\":\"QUEUED\",\"position\":0}", "{\"type\":\"STARTED\"}",
                "{\"type\":\"DONE\",\"firstToken\":7}"));
    }

    static String reserved() {
        return "{\"type\":\"RESERVED\",\"transfer\":\"descriptor\"}";
    }

    /** RESERVED naming the decode worker's pairing. */
    static String reserved(String model, String numerics) {
        return "{\"type\":\"RESERVED\",\"transfer\":\"descriptor\",\"pairing\":{\"model\":\"" + model
                + "\",\"numerics\":\"" + numerics + "\"}}";
    }

    static String token(int index, boolean last) {
        return "{\"type\":\"TOKEN\",\"index\":" + index + ",\"token\":" + (100 + index)
                + (last ? ",\"finishReason\":\"length\"" : "") + "}";
    }
}
