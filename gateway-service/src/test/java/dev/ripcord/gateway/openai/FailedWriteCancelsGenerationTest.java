package dev.ripcord.gateway.openai;

import java.time.Clock;
import java.time.Duration;
import java.util.List;

import dev.ripcord.gateway.generation.ByteTextCodec;
import dev.ripcord.gateway.generation.GeneratedToken;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import org.springframework.http.MediaType;
import org.springframework.http.codec.HttpMessageWriter;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.reactive.function.server.HandlerStrategies;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.reactive.result.view.ViewResolver;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Mono;
import reactor.netty.channel.AbortedException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A streaming response whose write fails (the connection closed just as the first event went out) must stop the
 * generation, although the writer only reports an error and never cancels its source: otherwise the generation
 * runs on to its end for a client that is gone (the load bench caught 4 such ghosts in 81 disconnects).
 */
class FailedWriteCancelsGenerationTest {

    @Test
    void aWriteThatFailsWithoutCancellingItsSourceStillCancelsTheGeneration() {
        ScriptedTokenGenerator generator = new ScriptedTokenGenerator();
        generator.replayThenHang(List.of(new GeneratedToken(0, 'h', null), new GeneratedToken(1, 'i', null)));
        OpenAiHandler handler = new OpenAiHandler(generator, new ByteTextCodec(), OpenAiProperties.defaults(),
                Clock.systemUTC(), new StreamGuard(Duration.ofMinutes(1)));
        MockServerWebExchange exchange = MockServerWebExchange.from(MockServerHttpRequest.post("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON)
                .body("{\"model\":\"" + ByteTextCodec.MODEL + "\",\"prompt\":\"hey\",\"max_tokens\":8,\"stream\":true}"));
        // Like Reactor Netty when the peer is gone: the first event is taken, then the write fails with
        // AbortedException, and the source is neither cancelled nor asked for more.
        exchange.getResponse().setWriteHandler(body -> Mono.create(sink -> body.subscribe(new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(Subscription subscription) {
                request(1);
            }

            @Override
            protected void hookOnNext(DataBuffer buffer) {
                DataBufferUtils.release(buffer);
                sink.error(new AbortedException("Connection has been closed BEFORE send operation"));
            }
        })));
        new RequestIdFilter().filter(exchange, identified -> Mono.empty()).block(); // as in the chain: the ID first
        ServerRequest request = ServerRequest.create(exchange, HandlerStrategies.withDefaults().messageReaders());

        assertThatThrownBy(() -> handler.completions(request)
                .flatMap(response -> response.writeTo(exchange, new ServerResponse.Context() {
                    @Override
                    public List<HttpMessageWriter<?>> messageWriters() {
                        return HandlerStrategies.withDefaults().messageWriters();
                    }

                    @Override
                    public List<ViewResolver> viewResolvers() {
                        return List.of();
                    }
                }))
                .block(Duration.ofSeconds(10))).isInstanceOf(AbortedException.class);

        assertThat(generator.subscriptions()).isEqualTo(1);
        assertThat(generator.cancellations()).as("the generation was cancelled when the write failed").isEqualTo(1);
    }

    @Test
    void aClientGoneFailureIsNotAServerError() {
        assertThat(OpenAiErrorHandler.isClientGone(new AbortedException("closed"))).isTrue();
        assertThat(OpenAiErrorHandler.isClientGone(new RuntimeException(new java.nio.channels.ClosedChannelException())))
                .isTrue();
        assertThat(OpenAiErrorHandler.isClientGone(new IllegalStateException("boom"))).isFalse();
    }
}
