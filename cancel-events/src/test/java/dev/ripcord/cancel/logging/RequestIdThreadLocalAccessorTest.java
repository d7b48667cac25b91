package dev.ripcord.cancel.logging;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;

/**
 * The MDC bridge as the services run it: automatic context propagation on, the request ID written into the Reactor
 * context once at the edge, and read from the MDC on whatever thread a signal arrives.
 */
class RequestIdThreadLocalAccessorTest {

    private Scheduler other;

    @BeforeEach
    void enable() {
        Hooks.enableAutomaticContextPropagation();
        other = Schedulers.newSingle("other");
    }

    @AfterEach
    void disable() {
        Hooks.disableAutomaticContextPropagation();
        other.dispose();
        MDC.clear();
    }

    @Test
    void aSignalDeliveredOnAnotherThreadSeesTheRequestIdOfItsPipeline() {
        String seen = Mono.just(1)
                .publishOn(other)
                .map(x -> Thread.currentThread().getName() + " " + MDC.get(RequestMdc.KEY))
                .contextWrite(Context.of(RequestMdc.KEY, "req-a"))
                .block(Duration.ofSeconds(10));

        assertThat(seen).startsWith("other").endsWith(" req-a");
    }

    @Test
    void aCancelSignalSeesTheRequestIdToo() {
        CopyOnWriteArrayList<String> seen = new CopyOnWriteArrayList<>();
        var subscription = Flux.never()
                .doOnCancel(() -> seen.add(String.valueOf(MDC.get(RequestMdc.KEY))))
                .contextWrite(Context.of(RequestMdc.KEY, "req-c"))
                .subscribe();

        subscription.dispose();

        assertThat(seen).containsExactly("req-c");
        assertThat(MDC.get(RequestMdc.KEY)).isNull();
    }

    @Test
    void theThreadIsLeftAsItWasSoTheNextRequestOnItDoesNotInheritTheId() {
        Mono.just(1).publishOn(other).contextWrite(Context.of(RequestMdc.KEY, "req-b"))
                .block(Duration.ofSeconds(10));

        String after = Mono.fromCallable(() -> String.valueOf(MDC.get(RequestMdc.KEY))).subscribeOn(other)
                .block(Duration.ofSeconds(10));

        assertThat(after).isEqualTo("null");
    }

    @Test
    void withRestoresWhatWasThereBefore() {
        MDC.put(RequestMdc.KEY, "outer");
        String inner = RequestMdc.withResult("inner", () -> MDC.get(RequestMdc.KEY));
        assertThat(inner).isEqualTo("inner");
        assertThat(MDC.get(RequestMdc.KEY)).isEqualTo("outer");
    }
}
