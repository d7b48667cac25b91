package dev.ripcord.worker;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.protocol.RequestIds;
import org.junit.jupiter.api.Test;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;

/** The worker's side of the one request identity: the gateway's header, judged by the same {@link RequestIds}. */
class RequestIdWebFilterTest {

    private final RequestIdWebFilter filter = new RequestIdWebFilter();
    private final List<String> contextIds = new ArrayList<>();
    private final WebFilterChain chain = exchange -> Mono.deferContextual(context -> {
        contextIds.add(context.getOrDefault(RequestIds.CONTEXT_KEY, "<none>"));
        return Mono.empty();
    });

    private static MockServerWebExchange exchange(String requestId) {
        MockServerHttpRequest.BaseBuilder<?> request = MockServerHttpRequest.post("/internal/v1/decode");
        if (requestId != null) {
            request.header(RequestIds.HEADER, requestId);
        }
        return MockServerWebExchange.from(request);
    }

    @Test
    void theGatewaysIdGoesOnTheExchangeAndIntoTheReactorContext() {
        MockServerWebExchange exchange = exchange("req-abcDEF0123456789abcdefgh");

        filter.filter(exchange, chain).block();

        assertThat((String) exchange.getAttribute(RequestIds.EXCHANGE_ATTRIBUTE)).isEqualTo("req-abcDEF0123456789abcdefgh");
        assertThat(contextIds).containsExactly("req-abcDEF0123456789abcdefgh");
    }

    @Test
    void aMissingOrInvalidIdLeavesExchangeAndContextAloneAndIsNeverMadeUp() {
        for (String id : new String[] {null, "bad id", "x".repeat(RequestIds.MAX_LENGTH + 1)}) {
            MockServerWebExchange exchange = exchange(id);

            filter.filter(exchange, chain).block();

            assertThat((Object) exchange.getAttribute(RequestIds.EXCHANGE_ATTRIBUTE)).isNull();
            assertThat(exchange.getResponse().getHeaders().get(RequestIds.HEADER)).isNull();
        }
        assertThat(contextIds).containsExactly("<none>", "<none>", "<none>");
    }

    @Test
    void runsFirst() {
        assertThat(filter.getOrder()).isEqualTo(Integer.MIN_VALUE);
    }
}
