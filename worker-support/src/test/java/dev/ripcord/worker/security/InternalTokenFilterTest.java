package dev.ripcord.worker.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;

import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.testing.AmbiguousPaths;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.test.web.reactive.server.WebTestClient;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.server.WebFilter;

/** A worker's {@code /internal/**} needs the internal token: 401 without, 403 wrong, served right; actuator is open. */
class InternalTokenFilterTest {

    private static final String TOKEN = "internal-token-for-tests";

    private static final RouterFunction<ServerResponse> ROUTES = RouterFunctions.route()
            .GET(InternalApi.STATUS, request -> ServerResponse.ok().bodyValue("status"))
            .POST(InternalApi.PREFILL, request -> ServerResponse.ok().bodyValue("prefill"))
            .GET("/actuator/health", request -> ServerResponse.ok().bodyValue("{\"status\":\"UP\"}"))
            .GET("/actuator/prometheus", request -> ServerResponse.ok().bodyValue("# metrics"))
            .build();

    private final WebTestClient client = WebTestClient.bindToRouterFunction(ROUTES)
            .webFilter(new InternalTokenFilter(TOKEN)).build();

    @Test
    void internalEndpointWithoutTheTokenIs401AndNeverReachesTheRoute() {
        client.get().uri(InternalApi.STATUS).exchange()
                .expectStatus().isUnauthorized()
                .expectHeader().valueEquals(HttpHeaders.WWW_AUTHENTICATE, InternalApi.INTERNAL_TOKEN_HEADER)
                .expectBody().jsonPath("$.error.code").isEqualTo("missing_internal_token");
        client.post().uri(InternalApi.PREFILL).exchange().expectStatus().isUnauthorized();
    }

    @Test
    void internalEndpointWithAWrongTokenIs403AndTheBodyNeverEchoesIt() {
        String wrong = TOKEN + "x";
        byte[] body = client.get().uri(InternalApi.STATUS).header(InternalApi.INTERNAL_TOKEN_HEADER, wrong).exchange()
                .expectStatus().isForbidden()
                .expectBody().jsonPath("$.error.code").isEqualTo("invalid_internal_token")
                .returnResult().getResponseBody();
        assertThat(new String(body)).doesNotContain(wrong);
        // A prefix of the right token, and an empty one, are wrong too.
        for (String almost : new String[] {TOKEN.substring(0, TOKEN.length() - 1), ""}) {
            client.get().uri(InternalApi.STATUS).header(InternalApi.INTERNAL_TOKEN_HEADER, almost).exchange()
                    .expectStatus().isForbidden();
        }
    }

    @Test
    void internalEndpointWithTheTokenIsServed() {
        client.get().uri(InternalApi.STATUS).header(InternalApi.INTERNAL_TOKEN_HEADER, TOKEN).exchange()
                .expectStatus().isOk().expectBody(String.class).isEqualTo("status");
        client.post().uri(InternalApi.PREFILL).header(InternalApi.INTERNAL_TOKEN_HEADER, TOKEN).exchange()
                .expectStatus().isOk();
    }

    @Test
    void actuatorHealthAndPrometheusNeedNoCredential() {
        client.get().uri("/actuator/health").exchange().expectStatus().isOk();
        client.get().uri("/actuator/prometheus").exchange().expectStatus().isOk();
        // A path that merely starts with the same letters is not internal.
        client.get().uri("/internalx").exchange().expectStatus().isNotFound();
    }

    /**
     * Regression: the filter compared the raw path with {@code /internal/} while the router matches the decoded path
     * with {@code ;params} stripped, so {@code /internal;x/v1/journal} and {@code /%69nternal/v1/journal} were served
     * without the token. Every such spelling of every internal route is refused, never routed.
     */
    @Test
    void everyAmbiguousSpellingOfAnInternalRouteIsRefusedNeverServed() {
        List<String> sent = new ArrayList<>();
        for (String route : List.of(InternalApi.STATUS, InternalApi.PREFILL, InternalApi.DECODE, InternalApi.JOURNAL,
                InternalApi.CANCEL.replace("{requestId}", "req-1"))) {
            for (String spelling : AmbiguousPaths.of(route)) {
                for (HttpMethod method : List.of(HttpMethod.GET, HttpMethod.POST)) {
                    int status = client.method(method).uri(URI.create("http://localhost" + spelling)).exchange()
                            .returnResult(String.class).getStatus().value();
                    assertThat(status).as("%s %s", method, spelling).isIn(400, 401);
                    sent.add(spelling);
                }
            }
        }
        assertThat(sent).hasSizeGreaterThan(100);
        client.get().uri(URI.create("http://localhost/internal;x/v1/status")).exchange().expectStatus().isBadRequest()
                .expectBody().jsonPath("$.error.code").isEqualTo("invalid_path");
    }

    @Test
    void ambiguousPathsAreRefusedOnOpenRoutesToo() {
        client.get().uri(URI.create("http://localhost/actuator;x/health")).exchange().expectStatus().isBadRequest();
        client.get().uri(URI.create("http://localhost/%61ctuator/health")).exchange().expectStatus().isBadRequest();
    }

    // --- start-up ---------------------------------------------------------------------------------------------

    private final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(InternalSecurityAutoConfiguration.class));

    @Test
    void aWorkerWithoutATokenRefusesToStartAndSaysWhatToSet() {
        runner.run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                    .hasMessageContaining("ripcord.internal.token is not set")
                    .hasMessageContaining("RIPCORD_INTERNAL_TOKEN")
                    .hasMessageContaining("ripcord.internal.auth.enabled=false");
        });
    }

    @Test
    void aWorkerWithATokenGuardsInternalWithIt() {
        runner.withPropertyValues("ripcord.internal.token=" + TOKEN).run(context -> {
            assertThat(context).hasNotFailed();
            WebFilter filter = context.getBean("ripcordInternalTokenFilter", WebFilter.class);
            assertThat(filter).isInstanceOf(InternalTokenFilter.class);
            WebTestClient configured = WebTestClient.bindToRouterFunction(ROUTES).webFilter(filter).build();
            configured.get().uri(InternalApi.STATUS).exchange().expectStatus().isUnauthorized();
            configured.get().uri(InternalApi.STATUS).header(InternalApi.INTERNAL_TOKEN_HEADER, TOKEN).exchange()
                    .expectStatus().isOk();
        });
    }

    @Test
    void disablingInternalAuthExplicitlyStartsWithoutATokenAndServesEveryone() {
        runner.withPropertyValues("ripcord.internal.auth.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            WebFilter filter = context.getBean("ripcordInternalTokenFilter", WebFilter.class);
            WebTestClient open = WebTestClient.bindToRouterFunction(ROUTES).webFilter(filter).build();
            open.get().uri(InternalApi.STATUS).exchange().expectStatus().isOk();
        });
    }

    // --- rotation ---------------------------------------------------------------------------------------------

    private static final String OLD = "old-internal-token";
    private static final String NEW = "new-internal-token";

    /**
     * A rotation in progress: a worker configured with the new token and the old one in
     * {@code ripcord.internal.previous-tokens} serves callers that still send the old token (gateways not yet
     * rolled) and those that send the new one, and refuses any other, so neither half of the rollout sees a 403.
     */
    @Test
    void duringARotationAWorkerServesTheCurrentAndThePreviousTokenAndNothingElse() {
        runner.withPropertyValues("ripcord.internal.token=" + NEW, "ripcord.internal.previous-tokens=" + OLD)
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    WebTestClient worker = WebTestClient.bindToRouterFunction(ROUTES)
                            .webFilter(context.getBean("ripcordInternalTokenFilter", WebFilter.class)).build();
                    for (String accepted : List.of(NEW, OLD)) {
                        worker.get().uri(InternalApi.STATUS).header(InternalApi.INTERNAL_TOKEN_HEADER, accepted)
                                .exchange().expectStatus().isOk();
                    }
                    for (String refused : List.of(NEW + OLD, OLD + "x", "", NEW + "," + OLD)) {
                        worker.get().uri(InternalApi.STATUS).header(InternalApi.INTERNAL_TOKEN_HEADER, refused)
                                .exchange().expectStatus().isForbidden();
                    }
                    worker.get().uri(InternalApi.STATUS).exchange().expectStatus().isUnauthorized();
                });
    }

    /** After the second rollout (previous tokens removed) the old token is refused: the rotation is complete. */
    @Test
    void onceThePreviousTokenIsDroppedItIsRefused() {
        runner.withPropertyValues("ripcord.internal.token=" + NEW).run(context -> {
            WebTestClient worker = WebTestClient.bindToRouterFunction(ROUTES)
                    .webFilter(context.getBean("ripcordInternalTokenFilter", WebFilter.class)).build();
            worker.get().uri(InternalApi.STATUS).header(InternalApi.INTERNAL_TOKEN_HEADER, NEW).exchange()
                    .expectStatus().isOk();
            worker.get().uri(InternalApi.STATUS).header(InternalApi.INTERNAL_TOKEN_HEADER, OLD).exchange()
                    .expectStatus().isForbidden();
        });
    }

    /** The environment variable form compose and Kubernetes use: a comma-separated list, blank entries ignored. */
    @Test
    void previousTokensBindFromACommaSeparatedListAndBlankMeansNone() {
        runner.withPropertyValues("ripcord.internal.token=" + NEW, "ripcord.internal.previous-tokens=" + OLD + ",older")
                .run(context -> assertThat(context.getBean(InternalAuthProperties.class).acceptedTokens())
                        .containsExactly(NEW, OLD, "older"));
        runner.withPropertyValues("ripcord.internal.token=" + NEW, "ripcord.internal.previous-tokens=")
                .run(context -> assertThat(context.getBean(InternalAuthProperties.class).acceptedTokens())
                        .containsExactly(NEW));
    }

    @Test
    void previousTokensWithoutACurrentTokenRefuseToStart() {
        runner.withPropertyValues("ripcord.internal.auth.enabled=false", "ripcord.internal.previous-tokens=" + OLD)
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).rootCause()
                            .hasMessageContaining("ripcord.internal.previous-tokens is set but ripcord.internal.token");
                });
    }
}
