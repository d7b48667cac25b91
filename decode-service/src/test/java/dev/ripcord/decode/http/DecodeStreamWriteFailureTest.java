package dev.ripcord.decode.http;

import java.io.IOException;
import java.time.Duration;
import java.util.List;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.http.WorkerRoutes;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.http.codec.HttpMessageWriter;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.http.server.reactive.ServerHttpResponseDecorator;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.reactive.function.server.HandlerStrategies;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.reactive.result.view.ViewResolver;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebExchangeDecorator;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A job stream whose write fails before its events end, without the events ever being cancelled (Reactor Netty
 * answers a write on a connection that was reset just then with an error and never subscribes to the body), cancels
 * the job in band all the same: reserved and waiting for KV, it ends with {@code CONNECTION_CLOSED} instead of
 * holding its pages until the transfer's attach timeout. Seen in the fault run, where a proxy reset the gateway's
 * connection as decode answered it.
 */
@DecodeWorkerTest
class DecodeStreamWriteFailureTest {

    @Autowired
    DecodeRoutes routes;

    @Autowired
    WorkerContext context;

    @Autowired
    CancelProperties cancel;

    @Autowired
    CancellationRegistry registry;

    @Test
    void aWriteThatFailsBeforeTheEventsEndCancelsTheJob() {
        String id = "write-fails-1";
        ServerResponse response = routes.accept(new DecodeRequest(id, 4, 4, new Sampling(0.0, 1.0, 7L), false),
                new WorkerRoutes(context, cancel, Duration.ofSeconds(1))).block(Duration.ofSeconds(30));
        assertThat(response).isNotNull();
        assertThat(RequestJournal.entries(context, id)).extracting(JournalEntry::event).contains("RESERVED");

        Throwable failure = response.writeTo(resetExchange(), new StrategiesContext())
                .then(Mono.<Throwable>empty())
                .onErrorResume(Mono::just)
                .block(Duration.ofSeconds(30));

        assertThat(failure).as("the write's own failure").isInstanceOf(IOException.class);
        await().atMost(Duration.ofSeconds(20)).until(() -> RequestJournal.entries(context, id).stream()
                .anyMatch(e -> e.event().equals("TRANSFER_ABORTED") || e.event().equals("KV_FAILED")));
        assertThat(RequestJournal.entries(context, id)).filteredOn(e -> e.event().equals("TRANSFER_ABORTED"))
                .singleElement().satisfies(e -> assertThat(e.detail()).contains("CONNECTION_CLOSED"));
        await().atMost(Duration.ofSeconds(30)).until(() -> registry.liveRegistrations() == 0);
    }

    /** An exchange whose response write fails at once, as on a connection that was just reset. */
    private static ServerWebExchange resetExchange() {
        MockServerWebExchange mock = MockServerWebExchange.from(MockServerHttpRequest.post("/internal/v1/decode"));
        ServerHttpResponse reset = new ServerHttpResponseDecorator(mock.getResponse()) {
            @Override
            public Mono<Void> writeWith(Publisher<? extends DataBuffer> body) {
                return Mono.error(new IOException("Connection reset by peer"));
            }
        };
        return new ServerWebExchangeDecorator(mock) {
            @Override
            public ServerHttpResponse getResponse() {
                return reset;
            }
        };
    }

    private static final class StrategiesContext implements ServerResponse.Context {
        private final HandlerStrategies strategies = HandlerStrategies.withDefaults();

        @Override
        public List<HttpMessageWriter<?>> messageWriters() {
            return strategies.messageWriters();
        }

        @Override
        public List<ViewResolver> viewResolvers() {
            return List.of();
        }
    }
}
