package dev.ripcord.gateway.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Path;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import javax.net.ssl.SSLHandshakeException;

import dev.ripcord.gateway.serving.ServingConfiguration;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.testing.TestPki;
import io.netty.handler.ssl.ClientAuth;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.LazyInitializationBeanFactoryPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.context.annotation.UserConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.webclient.autoconfigure.WebClientAutoConfiguration;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import reactor.core.publisher.Mono;
import reactor.netty.DisposableServer;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServer;

/**
 * The gateway's worker client over real TLS handshakes: its {@code internalWebClient}, built by the application's
 * own configuration ({@link AuthConfiguration}, {@link ServingConfiguration}, Boot's SSL bundles) with
 * {@code ripcord.gateway.internal-ssl-bundle} naming a PKCS12 bundle, calls a worker stand-in that requires a
 * client certificate (as {@code server.ssl.client-auth=need} does). The certificates are made by {@code keytool}
 * for this test ({@link TestPki}): a CA signs the worker's and the gateway's.
 */
class InternalMutualTlsTest {

    private static final String ANSWER = "{\"type\":\"RESERVED\"}\n{\"type\":\"TOKEN\",\"token\":7}\n";

    @TempDir
    static Path dir;

    static TestPki pki;
    static Path gatewayKeys;
    static Path workerKeys;
    static DisposableServer worker;
    static final AtomicInteger served = new AtomicInteger();

    @BeforeAll
    static void pkiAndWorker() {
        pki = TestPki.create(dir);
        workerKeys = pki.issue("decode", "ip:127.0.0.1");
        gatewayKeys = pki.issue("gateway", "dns:gateway.internal");
        worker = worker(workerKeys);
    }

    @AfterAll
    static void stopWorker() {
        worker.disposeNow(Duration.ofSeconds(10));
    }

    /** The gateway's configurations; lazily, as only the worker client (and what it needs) is under test. */
    private final ApplicationContextRunner gateway = new ApplicationContextRunner()
            .withInitializer(context -> context.addBeanFactoryPostProcessor(
                    new LazyInitializationBeanFactoryPostProcessor()))
            .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, WebClientAutoConfiguration.class))
            .withConfiguration(UserConfigurations.of(AuthConfiguration.class, ServingConfiguration.class));

    @Test
    void withTheBundleTheWorkerClientCompletesTheMutualHandshakeAndGetsTheAnswer() {
        gateway.withPropertyValues(bundle("internal", gatewayKeys))
                .withPropertyValues("ripcord.gateway.internal-ssl-bundle=internal")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(InternalTls.class).enabled()).isTrue();
                    int before = served.get();

                    ResponseEntity<String> answer = call(context.getBean("internalWebClient", WebClient.class),
                            worker.port());

                    assertThat(answer.getStatusCode()).isEqualTo(HttpStatus.OK);
                    assertThat(answer.getHeaders().getContentType()).hasToString(InternalApi.NDJSON);
                    assertThat(answer.getBody()).isEqualTo(ANSWER);
                    assertThat(served.get()).isEqualTo(before + 1);
                });
    }

    @Test
    void aBundleWithoutAClientCertificateFailsTheHandshakeWithAWorkerThatRequiresOne() {
        // TLS, not mutual: the bundle has the trust store only. The worker refuses the handshake.
        gateway.withPropertyValues(
                        "spring.ssl.bundle.jks.trust-only.truststore.location=" + pki.truststore().toUri(),
                        "spring.ssl.bundle.jks.trust-only.truststore.password=" + TestPki.PASSWORD,
                        "spring.ssl.bundle.jks.trust-only.truststore.type=PKCS12",
                        "ripcord.gateway.internal-ssl-bundle=trust-only")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertHandshakeFails(context.getBean("internalWebClient", WebClient.class), worker.port());
                });
    }

    @Test
    void aClientWithoutACertificateFailsTheHandshake() {
        // The control: a client that trusts the worker's CA and presents no certificate, as any caller without the
        // gateway's key would. The stand-in refuses it as a worker with client-auth=need does.
        HttpClient anonymous = HttpClient.create().secure(spec -> spec.sslContext(Http11SslContextSpec.forClient()
                .configure(builder -> builder.trustManager(TestPki.trustManagers(pki.truststore())))));
        WebClient client = WebClient.builder().clientConnector(new ReactorClientHttpConnector(anonymous)).build();

        assertHandshakeFails(client, worker.port());
    }

    @Test
    void aWorkerWhoseCertificateNamesAnotherHostIsRefused() {
        // The gateway's certificate names gateway.internal, not 127.0.0.1: host names are verified.
        DisposableServer misnamed = worker(gatewayKeys);
        try {
            gateway.withPropertyValues(bundle("internal", gatewayKeys))
                    .withPropertyValues("ripcord.gateway.internal-ssl-bundle=internal")
                    .run(context -> assertThat(assertHandshakeFails(
                            context.getBean("internalWebClient", WebClient.class), misnamed.port()))
                            .rootCause().isInstanceOf(CertificateException.class)
                            .hasMessageContaining("127.0.0.1"));
        } finally {
            misnamed.disposeNow(Duration.ofSeconds(10));
        }
    }

    @Test
    void aBundleNameThatIsNotConfiguredIsRefusedByName() {
        gateway.withPropertyValues(bundle("internal", gatewayKeys))
                .withPropertyValues("ripcord.gateway.internal-ssl-bundle=intenral")
                .run(context -> assertThatThrownBy(() -> context.getBean(InternalTls.class))
                        .rootCause().hasMessageContaining("intenral"));
    }

    private static String[] bundle(String name, Path keystore) {
        String prefix = "spring.ssl.bundle.jks." + name + ".";
        return new String[] {
                prefix + "keystore.location=" + keystore.toUri(),
                prefix + "keystore.password=" + TestPki.PASSWORD,
                prefix + "keystore.type=PKCS12",
                prefix + "truststore.location=" + pki.truststore().toUri(),
                prefix + "truststore.password=" + TestPki.PASSWORD,
                prefix + "truststore.type=PKCS12"};
    }

    private static ResponseEntity<String> call(WebClient client, int port) {
        return client.post().uri("https://127.0.0.1:" + port + InternalApi.DECODE)
                .contentType(MediaType.APPLICATION_JSON)
                .accept(MediaType.parseMediaType(InternalApi.NDJSON))
                .bodyValue("{}")
                .retrieve().toEntity(String.class)
                .block(Duration.ofSeconds(30));
    }

    /** Calls the worker, asserts that the TLS handshake failed and the worker served nothing; the failure. */
    private static Throwable assertHandshakeFails(WebClient client, int port) {
        int before = served.get();
        Throwable failure = catchThrowable(() -> call(client, port));
        assertThat(failure).isInstanceOf(WebClientRequestException.class);
        assertThat(Stream.iterate(failure, Objects::nonNull, Throwable::getCause)).as("the causes of %s", failure)
                .hasAtLeastOneElementOfType(SSLHandshakeException.class);
        assertThat(served.get()).as("requests the worker served").isEqualTo(before);
        return failure;
    }

    /** A worker stand-in on a free loopback port: TLS with {@code keystore}, a client certificate required. */
    private static DisposableServer worker(Path keystore) {
        return HttpServer.create().host("127.0.0.1").port(0)
                .secure(spec -> spec.sslContext(Http11SslContextSpec.forServer(TestPki.keyManagers(keystore))
                        .configure(builder -> builder.trustManager(TestPki.trustManagers(pki.truststore()))
                                .clientAuth(ClientAuth.REQUIRE))))
                .route(routes -> routes.post(InternalApi.DECODE, (request, response) -> request.receive()
                        .aggregate().asString().defaultIfEmpty("")
                        .flatMap(body -> {
                            served.incrementAndGet();
                            return response.status(200).header("Content-Type", InternalApi.NDJSON)
                                    .sendString(Mono.just(ANSWER)).then();
                        })))
                .bindNow(Duration.ofSeconds(10));
    }
}
