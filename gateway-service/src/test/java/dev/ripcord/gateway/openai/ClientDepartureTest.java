package dev.ripcord.gateway.openai;

import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import dev.ripcord.gateway.generation.Admission;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.protocol.CancelReason;
import io.netty.channel.ChannelOption;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.test.context.TestPropertySource;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.core.publisher.Flux;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Every client that leaves is noticed and its work stopped, on a real Netty server and a raw socket, with a
 * generation that is silent (a prompt waiting in a queue, or a model thinking): nothing would be written that could
 * fail. A client that stops reading without closing (what a half-open connection looks like from here) is found
 * through the heartbeats backing up into a stall; a client that closes before the first token, streamed or not, is
 * found by its connection closing.
 */
@TestPropertySource(properties = {"ripcord.gateway.openai.sse-heartbeat=2ms",
        "ripcord.gateway.openai.stream-stall-timeout=300ms"})
class ClientDepartureTest extends OpenAiEndpointTest {

    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String STREAMED = "{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true}";
    private static final String NOT_STREAMED = "{\"model\":\"ripcord-small\",\"prompt\":\"p\"}";

    @Autowired
    StreamGuard guard;

    private DisposableServer server;

    @BeforeEach
    void startServer() {
        // As the gateway's own server: a small send buffer, so a client that stops reading is seen soon.
        server = HttpServer.create().host("127.0.0.1").port(0)
                .childOption(ChannelOption.SO_SNDBUF, 4096)
                .handle(new ReactorHttpHandlerAdapter(WebHttpHandlerBuilder.applicationContext(context).build()))
                .bindNow(Duration.ofSeconds(10));
    }

    @AfterEach
    void stopServer() {
        server.disposeNow(Duration.ofSeconds(10));
    }

    @Test
    void aClientThatStopsReadingWithoutClosingIsNoticedAndItsWorkStops() throws Exception {
        generator.script(request -> Flux.deferContextual(view -> {
            Admission.admitted(view); // the workers took it; now it waits, silent
            return Flux.<GeneratedToken>never();
        }));
        long stalledBefore = guard.stats().stalled();
        try (Socket socket = new Socket()) {
            socket.setReceiveBufferSize(1024); // before connecting: the window it advertises stays small
            socket.connect(new InetSocketAddress("127.0.0.1", server.port()));
            send(socket, STREAMED);
            // ... and never reads a byte, nor closes.
            await().atMost(WAIT).untilAsserted(() -> assertThat(generator.cancellations()).isEqualTo(1));
        }
        assertThat(generator.cancelReasons()).containsExactly(CancelReason.CLIENT_STALLED);
        assertThat(guard.stats().stalled()).isEqualTo(stalledBefore + 1);
    }

    @Test
    void aStreamedClientThatLeavesBeforeTheFirstTokenOfASilentGenerationStopsIt() throws Exception {
        generator.script(request -> Flux.never());
        try (Socket socket = new Socket("127.0.0.1", server.port())) {
            send(socket, STREAMED);
            await().atMost(WAIT).until(() -> generator.subscriptions() == 1);
        } // closed: nothing was, or will be, written that could fail

        await().atMost(WAIT).untilAsserted(() -> assertThat(generator.cancellations()).isEqualTo(1));
        assertThat(generator.cancelReasons()).containsExactly(CancelReason.CLIENT_DISCONNECT);
    }

    @Test
    void aNonStreamedClientThatLeavesBeforeTheAnswerStopsItsGeneration() throws Exception {
        generator.script(request -> Flux.never());
        try (Socket socket = new Socket("127.0.0.1", server.port())) {
            send(socket, NOT_STREAMED);
            await().atMost(WAIT).until(() -> generator.subscriptions() == 1);
        }

        await().atMost(WAIT).untilAsserted(() -> assertThat(generator.cancellations()).isEqualTo(1));
        assertThat(generator.cancelReasons()).containsExactly(CancelReason.CLIENT_DISCONNECT);
    }

    private static void send(Socket socket, String json) throws Exception {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        OutputStream out = socket.getOutputStream();
        out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(body);
        out.flush();
    }
}
