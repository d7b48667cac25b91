package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.gateway.generation.GeneratedToken;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ReactorHttpHandlerAdapter;
import org.springframework.test.context.TestPropertySource;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.server.adapter.WebHttpHandlerBuilder;
import reactor.core.publisher.Flux;
import reactor.netty.DisposableServer;
import reactor.netty.http.server.HttpServer;

import dev.ripcord.protocol.CancelReason;

/**
 * A client that asks for an endless stream and never reads it, on a raw socket with a tiny receive buffer, behind a
 * real Reactor Netty server: the gateway must not buffer the stream without bound, and once the client has accepted
 * nothing for the stall timeout, the generation is cancelled with {@code CLIENT_STALLED} and the connection closed.
 * The timeout is short here only so the test is quick; nothing asserts on time.
 */
@TestPropertySource(properties = "ripcord.gateway.openai.stream-stall-timeout=500ms")
class StalledClientTest extends OpenAiEndpointTest {

    @Autowired
    StreamGuard streamGuard;

    private DisposableServer server;

    @BeforeEach
    void startServer() {
        server = HttpServer.create().host("127.0.0.1").port(0)
                .handle(new ReactorHttpHandlerAdapter(WebHttpHandlerBuilder.applicationContext(context).build()))
                .bindNow(Duration.ofSeconds(10));
    }

    @AfterEach
    void stopServer() {
        server.disposeNow(Duration.ofSeconds(10));
    }

    @Test
    void clientThatNeverReadsIsCancelledAsStalledWithBoundedBuffersAndItsConnectionClosed() throws IOException {
        AtomicLong generated = new AtomicLong();
        generator.script(request -> Flux.<GeneratedToken, Integer>generate(() -> 0, (i, sink) -> {
            sink.next(new GeneratedToken(i, 'a' + i % 26, null));
            return i + 1;
        }).doOnNext(token -> generated.incrementAndGet()));
        long stalledBefore = streamGuard.stats().stalled();

        try (Socket socket = new Socket()) {
            socket.setReceiveBufferSize(1024);
            socket.connect(new InetSocketAddress("127.0.0.1", server.port()), 5_000);
            byte[] body = "{\"model\":\"ripcord-small\",\"prompt\":\"p\",\"stream\":true}"
                    .getBytes(StandardCharsets.UTF_8);
            OutputStream out = socket.getOutputStream();
            out.write(("POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    + "X-Request-Id: stalled-client-1\r\nContent-Length: " + body.length + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.write(body);
            out.flush();

            // Not reading a byte: the gateway must give up on us.
            await().atMost(Duration.ofSeconds(60)).until(() -> generator.cancellations() == 1);

            assertThat(generator.cancelReasons()).containsExactly(CancelReason.CLIENT_STALLED);
            assertThat(streamGuard.stats().stalled()).isEqualTo(stalledBefore + 1);
            assertThat(streamGuard.stats().peak()).as("events one stream's buffer held at most")
                    .isPositive().isLessThanOrEqualTo(StreamGuard.CAPACITY);
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                assertThat(streamGuard.stats().open()).as("streams being written").isZero();
                assertThat(streamGuard.stats().held()).as("events held").isZero();
            });
            System.out.printf("stalled client: %d tokens generated before the stream stalled%n", generated.get());

            // The server closed the connection: what was already in flight drains, then the stream ends.
            assertThat(drainUntilClosed(socket)).as("connection closed by the gateway").isTrue();
        }

        // And the gateway goes on serving.
        generator.replay(tokensThenEos("ok"));
        String answer = WebClient.create("http://127.0.0.1:" + server.port()).post().uri("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON).bodyValue("{\"model\":\"ripcord-small\",\"prompt\":\"p\"}")
                .retrieve().bodyToMono(String.class).block(Duration.ofSeconds(10));
        assertThat(json(answer).get("choices").get(0).get("text").stringValue()).isEqualTo("ok");
    }

    /** Reads to the end; true if the peer closed (EOF or reset), false if it kept the connection open. */
    private static boolean drainUntilClosed(Socket socket) throws IOException {
        socket.setSoTimeout(20_000);
        InputStream in = socket.getInputStream();
        byte[] buffer = new byte[64 * 1024];
        try {
            while (in.read(buffer) >= 0) {
                // discard
            }
            return true;
        } catch (java.net.SocketTimeoutException stillOpen) {
            return false;
        } catch (SocketException reset) {
            return true;
        }
    }
}
