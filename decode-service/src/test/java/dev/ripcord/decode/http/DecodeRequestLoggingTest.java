package dev.ripcord.decode.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.Sampling;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.client.WebClient;

/**
 * The decode worker's log lines about a request carry its ID in the MDC on every thread: the Netty event loop that
 * sees the gateway close the stream (the in-band cancel), and the engine loop that stops the job. Real worker
 * (tiny engine), real port, no Kafka.
 */
@DecodeWorkerTest
class DecodeRequestLoggingTest {

    @LocalServerPort
    int port;

    @Autowired
    CancellationRegistry registry;

    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final Logger ripcordLogs = (Logger) LoggerFactory.getLogger("dev.ripcord");

    @BeforeEach
    void captureLogs() {
        appender.start();
        ripcordLogs.addAppender(appender);
    }

    @AfterEach
    void stopCapturing() {
        ripcordLogs.detachAppender(appender);
        appender.stop();
    }

    @Test
    void logLinesAboutARequestCarryItsIdOnTheEventLoopAndTheEngineLoop() {
        String id = "obs-decode-1";
        DecodeEvent first = WebClient.create("http://127.0.0.1:" + port).post().uri(InternalApi.DECODE)
                .header(RequestIds.HEADER, id)
                .header("X-Ripcord-Internal-Token", DecodeWorkerTest.INTERNAL_TOKEN)
                .contentType(MediaType.APPLICATION_JSON)
                .accept(MediaType.parseMediaType(InternalApi.NDJSON))
                .bodyValue(new DecodeRequest(id, 4, 4, new Sampling(0.0, 1.0, 7L), false))
                .retrieve().bodyToFlux(DecodeEvent.class)
                .next() // takes RESERVED, then closes the stream: the worker sees an in-band cancel
                .block(Duration.ofSeconds(30));
        assertThat(first).isInstanceOf(DecodeEvent.Reserved.class);

        await().atMost(Duration.ofSeconds(30)).until(() -> registry.liveRegistrations() == 0);
        await().atMost(Duration.ofSeconds(30)).until(() -> aboutIt(id).stream()
                .anyMatch(e -> isEventLoop(e.getThreadName())));

        assertThat(aboutIt(id)).allSatisfy(e -> assertThat(e.getMDCPropertyMap())
                .as("MDC of [%s] %s", e.getThreadName(), e.getFormattedMessage())
                .containsEntry("requestId", id));
    }

    /** Reactor Netty's event-loop threads: {@code reactor-http-epoll-3}, {@code webflux-http-nio-1}, ... */
    private static boolean isEventLoop(String thread) {
        return thread.matches(".+-http-(epoll|nio|kqueue|io_uring)-\\d+");
    }

    private List<ILoggingEvent> aboutIt(String id) {
        List<ILoggingEvent> logged;
        synchronized (appender) { // appends hold the appender's lock; its list is a plain ArrayList
            logged = List.copyOf(appender.list);
        }
        return logged.stream().filter(e -> e.getFormattedMessage().contains(id)).toList();
    }
}
