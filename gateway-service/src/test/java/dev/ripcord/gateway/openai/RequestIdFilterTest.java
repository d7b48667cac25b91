package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.gateway.auth.ApiKeyFilter;
import dev.ripcord.protocol.RequestIds;
import org.junit.jupiter.api.Test;
import org.springframework.mock.http.server.reactive.MockServerHttpRequest;
import org.springframework.mock.web.server.MockServerWebExchange;
import org.springframework.web.server.WebFilterChain;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * The one place a request ID is born: what {@link RequestIdFilter} puts on the response, the exchange and the Reactor
 * context, for a valid, a missing and an invalid client {@code X-Request-Id}. (The whole gateway's answers, 401 and
 * 429 included, are covered by {@code auth.RequestIdentityTest}.)
 */
class RequestIdFilterTest {

    private static final String GENERATED = "req-[A-Za-z0-9]{24}";

    private final RequestIdFilter filter = new RequestIdFilter();
    private final List<String> contextIds = new ArrayList<>();
    private final WebFilterChain chain = exchange -> Mono.deferContextual(context -> {
        contextIds.add(context.getOrDefault(RequestIds.CONTEXT_KEY, "<none>"));
        return Mono.empty();
    });

    private static MockServerWebExchange exchange(String requestId) {
        MockServerHttpRequest.BaseBuilder<?> request = MockServerHttpRequest.post("/v1/completions");
        if (requestId != null) {
            request.header(RequestIds.HEADER, requestId);
        }
        return MockServerWebExchange.from(request);
    }

    @Test
    void validClientIdIsKeptOnTheResponseTheExchangeAndTheReactorContext() {
        MockServerWebExchange exchange = exchange("client-42.a:b_c");

        StepVerifier.create(filter.filter(exchange, chain)).verifyComplete();

        assertThat(exchange.getResponse().getHeaders().get(RequestIds.HEADER)).containsExactly("client-42.a:b_c");
        assertThat(RequestIdFilter.requestId(exchange)).isEqualTo("client-42.a:b_c");
        assertThat(contextIds).containsExactly("client-42.a:b_c");
    }

    @Test
    void longestValidClientIdIsKept() {
        String id = "x".repeat(RequestIds.MAX_LENGTH);
        MockServerWebExchange exchange = exchange(id);

        StepVerifier.create(filter.filter(exchange, chain)).verifyComplete();

        assertThat(exchange.getResponse().getHeaders().getFirst(RequestIds.HEADER)).isEqualTo(id);
        assertThat(contextIds).containsExactly(id);
    }

    @Test
    void missingIdIsGeneratedInTheDocumentedFormatAndIsTheSameEverywhere() {
        MockServerWebExchange exchange = exchange(null);

        StepVerifier.create(filter.filter(exchange, chain)).verifyComplete();

        String id = exchange.getResponse().getHeaders().getFirst(RequestIds.HEADER);
        assertThat(id).matches(GENERATED);
        assertThat(RequestIdFilter.requestId(exchange)).isEqualTo(id);
        assertThat(contextIds).containsExactly(id);
    }

    @Test
    void eachRequestWithoutAnIdGetsADifferentOne() {
        MockServerWebExchange first = exchange(null);
        MockServerWebExchange second = exchange(null);

        StepVerifier.create(filter.filter(first, chain).then(filter.filter(second, chain))).verifyComplete();

        assertThat(RequestIdFilter.requestId(first)).isNotEqualTo(RequestIdFilter.requestId(second));
    }

    @Test
    void invalidClientIdIsRefusedWith400NamingTheHeaderAndTheAnswerCarriesAFreshId() {
        for (String invalid : new String[] {"has space", "slash/no", "", "x".repeat(RequestIds.MAX_LENGTH + 1),
                "new\nline", "é"}) {
            MockServerWebExchange exchange = exchange(invalid);
            AtomicReference<Throwable> failure = new AtomicReference<>();

            StepVerifier.create(filter.filter(exchange, chain)).consumeErrorWith(failure::set).verify();

            assertThat(failure.get()).as("for %s", invalid).isInstanceOf(ApiException.class);
            ApiException error = (ApiException) failure.get();
            assertThat(error.errorCode()).isEqualTo(ErrorCode.INVALID_REQUEST_ID);
            assertThat(error.getStatusCode().value()).isEqualTo(400);
            assertThat(error.param()).isEqualTo("X-Request-Id");
            assertThat(error.message()).contains("X-Request-Id", "1 to 128 characters");
            String fresh = exchange.getResponse().getHeaders().getFirst(RequestIds.HEADER);
            assertThat(fresh).matches(GENERATED);
            assertThat(RequestIdFilter.requestId(exchange)).isEqualTo(fresh);
        }
        assertThat(contextIds).as("nothing behind the filter ran").isEmpty();
    }

    @Test
    void runsFirstOfAllFiltersAndBeforeAuthentication() {
        assertThat(filter.getOrder()).isEqualTo(Integer.MIN_VALUE);
        assertThat(RequestIdFilter.ORDER).isLessThan(ApiKeyFilter.ORDER);
    }
}
