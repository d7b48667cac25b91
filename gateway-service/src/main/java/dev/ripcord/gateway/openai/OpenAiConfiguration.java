package dev.ripcord.gateway.openai;

import static org.springframework.web.reactive.function.server.RequestPredicates.path;

import java.time.Clock;
import java.util.Set;

import dev.ripcord.gateway.generation.RequestOutcome;
import dev.ripcord.gateway.generation.TextCodec;
import dev.ripcord.gateway.generation.TokenGenerator;
import dev.ripcord.gateway.model.ChatTemplateProperties;
import io.micrometer.core.instrument.MeterRegistry;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.nio.NioChannelOption;
import io.netty.channel.socket.nio.NioSocketChannel;
import jdk.net.ExtendedSocketOptions;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.reactor.netty.NettyServerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.HttpMethod;
import org.springframework.util.unit.DataSize;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.MethodNotAllowedException;
import org.springframework.web.server.WebExceptionHandler;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.netty.http.server.HttpServer;

/**
 * Wires the OpenAI-compatible HTTP surface: the request-ID filter (first of all filters), the routes and the error
 * handler that renders every {@code /v1/**} error as an OpenAI body.
 *
 * <p>Needs one {@link TokenGenerator} and one {@link TextCodec} bean, defined elsewhere. Uses a {@link Clock} bean
 * for {@code created} if there is exactly one, else the system UTC clock. Reads {@link OpenAiProperties}.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(OpenAiProperties.class)
public class OpenAiConfiguration {

    /** One per application: the streams' buffers and stall watches, counted in the meter registry if there is one. */
    @Bean
    StreamGuard openAiStreamGuard(OpenAiProperties properties, ObjectProvider<MeterRegistry> meters) {
        StreamGuard guard = new StreamGuard(properties.streamStallTimeout());
        meters.ifAvailable(guard.stats()::bindTo);
        return guard;
    }

    /**
     * Client connections: the kernel send buffer capped at {@code socket-send-buffer}, so what a client that stops
     * reading can pin in the kernel is bounded and its stall is seen; TCP keepalive probing after {@code keep-alive}
     * of silence (every third of it, three times); and, on the native transport, unacknowledged bytes given up on
     * after twice {@code keep-alive} ({@code TCP_USER_TIMEOUT}). A connection the kernel gives up on closes, which
     * ends its request ({@link OpenAiHandler}): that is how a half-open connection (a NAT or load balancer that
     * dropped it) is found, streamed or not.
     */
    @Bean
    NettyServerCustomizer openAiClientConnections(OpenAiProperties properties) {
        DataSize size = properties.socketSendBuffer();
        int idleSeconds = (int) Math.max(1, properties.keepAlive().toSeconds());
        int intervalSeconds = Math.max(1, idleSeconds / 3);
        int userTimeoutMillis = (int) Math.min(Integer.MAX_VALUE, properties.keepAlive().toMillis() * 2);
        return server -> {
            HttpServer configured = server.childOption(ChannelOption.SO_KEEPALIVE, true)
                    .doOnConnection(connection -> keepAliveTimings(connection.channel(), idleSeconds,
                            intervalSeconds, userTimeoutMillis));
            return size == null ? configured : configured.childOption(ChannelOption.SO_SNDBUF, (int) size.toBytes());
        };
    }

    /**
     * The keepalive timings, by transport: the native one's options, or the JDK's extended socket options. The epoll
     * classes are on the runtime class path only (Reactor Netty brings them), so its options are found by their
     * registered names, which are the very constants {@code EpollChannelOption} declares.
     */
    private static void keepAliveTimings(Channel channel, int idleSeconds, int intervalSeconds,
                                         int userTimeoutMillis) {
        ChannelConfig config = channel.config();
        if (channel.getClass().getName().startsWith("io.netty.channel.epoll.")) {
            config.setOption(epollOption("TCP_KEEPIDLE"), idleSeconds);
            config.setOption(epollOption("TCP_KEEPINTVL"), intervalSeconds);
            config.setOption(epollOption("TCP_KEEPCNT"), 3);
            config.setOption(epollOption("TCP_USER_TIMEOUT"), userTimeoutMillis);
        } else if (channel instanceof NioSocketChannel) {
            config.setOption(NioChannelOption.of(ExtendedSocketOptions.TCP_KEEPIDLE), idleSeconds);
            config.setOption(NioChannelOption.of(ExtendedSocketOptions.TCP_KEEPINTERVAL), intervalSeconds);
            config.setOption(NioChannelOption.of(ExtendedSocketOptions.TCP_KEEPCOUNT), 3);
        }
    }

    @SuppressWarnings("unchecked")
    private static ChannelOption<Integer> epollOption(String name) {
        return (ChannelOption<Integer>) (ChannelOption<?>) ChannelOption.valueOf(
                "io.netty.channel.epoll.EpollChannelOption#" + name);
    }

    /**
     * The threads chat templates render on ({@code ripcord.openai.template-threads}), off the event loops: a
     * template is code from the model file, and whatever it does within its budget occupies only these.
     */
    @Bean(destroyMethod = "dispose")
    Scheduler chatTemplateScheduler(ObjectProvider<ChatTemplateProperties> properties) {
        ChatTemplateProperties chat = properties.getIfUnique(() -> new ChatTemplateProperties(null));
        return Schedulers.newBoundedElastic(chat.templateThreads(), chat.templateQueue(), "chat-template");
    }

    @Bean
    RouterFunction<ServerResponse> openAiRoutes(TokenGenerator generator, TextCodec codec, OpenAiProperties properties,
            ObjectProvider<Clock> clock, StreamGuard streamGuard, ObjectProvider<RequestOutcome.Listener> outcomes,
            @Qualifier("chatTemplateScheduler") Scheduler chatTemplateScheduler) {
        OpenAiHandler handler = new OpenAiHandler(generator, codec, properties, clock.getIfUnique(Clock::systemUTC),
                streamGuard, outcomes.getIfUnique(() -> RequestOutcome.Listener.NONE), chatTemplateScheduler);
        return RouterFunctions.route()
                .POST("/v1/completions", handler::completions)
                .POST("/v1/chat/completions", handler::chatCompletions)
                .GET("/v1/models", handler::models)
                .GET("/v1/models/{model}", handler::model)
                // the paths exist, so a wrong method is a 405 with Allow, not the 404 of an unknown path
                .route(path("/v1/completions").or(path("/v1/chat/completions")), request -> notAllowed(request, HttpMethod.POST))
                .route(path("/v1/models").or(path("/v1/models/{model}")), request -> notAllowed(request, HttpMethod.GET))
                .build();
    }

    /** The request ID of every exchange, first in the filter chain. */
    @Bean
    RequestIdFilter requestIdFilter() {
        return new RequestIdFilter();
    }

    @Bean
    WebExceptionHandler openAiErrorHandler() {
        return new OpenAiErrorHandler();
    }

    private static Mono<ServerResponse> notAllowed(ServerRequest request,
            HttpMethod allowed) {
        return Mono.error(new MethodNotAllowedException(request.method(), Set.of(allowed)));
    }
}
