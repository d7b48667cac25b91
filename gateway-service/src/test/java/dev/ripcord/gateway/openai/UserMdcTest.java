package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.slf4j.MDC;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;

/**
 * The OpenAI {@code user} reaches the MDC on the thread that handles a signal after a hop, as the request ID does
 * (the accessor is found through {@code ServiceLoader}, like the services' own), is cut to 64 characters, and leaves
 * nothing behind on the thread.
 */
class UserMdcTest {

    @Test
    void theUserIsInTheMdcAfterAThreadHopAndGoneAfterwards() {
        Hooks.enableAutomaticContextPropagation();
        try {
            String seen = Mono.just(1).publishOn(Schedulers.boundedElastic()).map(x -> String.valueOf(MDC.get("user")))
                    .contextWrite(context -> UserMdc.put(context, "alice"))
                    .block(Duration.ofSeconds(10));
            String longOne = Mono.just(1).publishOn(Schedulers.boundedElastic())
                    .map(x -> String.valueOf(MDC.get("user")))
                    .contextWrite(context -> UserMdc.put(context, "b".repeat(100)))
                    .block(Duration.ofSeconds(10));
            String none = Mono.just(1).publishOn(Schedulers.boundedElastic()).map(x -> String.valueOf(MDC.get("user")))
                    .block(Duration.ofSeconds(10));

            assertThat(seen).isEqualTo("alice");
            assertThat(longOne).isEqualTo("b".repeat(64));
            assertThat(none).isEqualTo("null");
            assertThat(UserMdc.put(Context.empty(), null).isEmpty()).isTrue();
        } finally {
            Hooks.disableAutomaticContextPropagation();
        }
    }
}
