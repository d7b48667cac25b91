package dev.ripcord.decode.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.stream.Stream;

import javax.net.ssl.SSLHandshakeException;

import dev.ripcord.decode.DecodeApplication;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.testing.TestPki;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalManagementPort;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.http.client.reactive.ReactorClientHttpConnector;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import org.springframework.web.reactive.function.client.WebClientResponseException;
import reactor.netty.http.Http11SslContextSpec;
import reactor.netty.http.client.HttpClient;

/**
 * A worker configured for mutual TLS as docs/security.md says, over real handshakes: Boot's
 * {@code server.ssl.bundle} and {@code server.ssl.client-auth=need}, a PKCS12 bundle whose certificates
 * {@code keytool} made for this test ({@link TestPki}), and actuator on its own plain port. Real decode worker
 * (tiny engine), no Kafka.
 */
@SpringBootTest(classes = DecodeApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "ripcord.engine.preset=tiny",
                "ripcord.cancel.propagation=in-band",
                "spring.cloud.stream.function.autodetect=false",
                "ripcord.internal.token=" + DecodeMutualTlsTest.TOKEN,
                "server.ssl.bundle=internal",
                "server.ssl.client-auth=need",
                "management.server.port=0",
                "management.server.ssl.enabled=false",
        })
class DecodeMutualTlsTest {

    static final String TOKEN = "test-internal-token";

    @TempDir
    static Path dir;

    static TestPki pki;
    static Path workerKeys;
    static Path gatewayKeys;

    @LocalServerPort
    int port;

    @LocalManagementPort
    int managementPort;

    /** Before the context starts: its bundle is read from these stores when it does. */
    @BeforeAll
    static void pki() {
        pki = TestPki.create(dir);
        workerKeys = pki.issue("decode", "ip:127.0.0.1");
        gatewayKeys = pki.issue("gateway", "dns:gateway.internal");
    }

    @DynamicPropertySource
    static void bundle(DynamicPropertyRegistry registry) {
        String prefix = "spring.ssl.bundle.jks.internal.";
        registry.add(prefix + "keystore.location", () -> workerKeys.toUri().toString());
        registry.add(prefix + "keystore.password", () -> TestPki.PASSWORD);
        registry.add(prefix + "keystore.type", () -> "PKCS12");
        registry.add(prefix + "truststore.location", () -> pki.truststore().toUri().toString());
        registry.add(prefix + "truststore.password", () -> TestPki.PASSWORD);
        registry.add(prefix + "truststore.type", () -> "PKCS12");
    }

    @Test
    void aClientWithTheCertificateAndTheTokenGetsTheStatus() {
        ResponseEntity<String> status = status(client(true)).header(InternalApi.INTERNAL_TOKEN_HEADER, TOKEN)
                .retrieve().toEntity(String.class).block(Duration.ofSeconds(30));

        assertThat(status.getStatusCode()).isEqualTo(HttpStatus.OK);
        assertThat(status.getBody()).contains("\"decode\"");
    }

    @Test
    void theCertificateDoesNotReplaceTheToken() {
        Throwable failure = catchThrowable(() -> status(client(true)).retrieve().toBodilessEntity()
                .block(Duration.ofSeconds(30)));

        assertThat(failure).isInstanceOf(WebClientResponseException.class);
        assertThat(((WebClientResponseException) failure).getStatusCode()).isEqualTo(HttpStatus.UNAUTHORIZED);
    }

    @Test
    void aClientWithoutACertificateFailsTheHandshake() {
        Throwable failure = catchThrowable(() -> status(client(false))
                .header(InternalApi.INTERNAL_TOKEN_HEADER, TOKEN)
                .retrieve().toBodilessEntity().block(Duration.ofSeconds(30)));

        assertThat(failure).isInstanceOf(WebClientRequestException.class);
        assertThat(Stream.iterate(failure, Objects::nonNull, Throwable::getCause)).as("the causes of %s", failure)
                .hasAtLeastOneElementOfType(SSLHandshakeException.class);
    }

    @Test
    void actuatorOnItsOwnPortIsPlainHttpSoProbesNeedNoCertificate() {
        ResponseEntity<Void> health = WebClient.create("http://127.0.0.1:" + managementPort)
                .get().uri("/actuator/health/liveness").retrieve().toBodilessEntity()
                .block(Duration.ofSeconds(30));

        assertThat(health.getStatusCode()).isEqualTo(HttpStatus.OK);
    }

    private WebClient.RequestHeadersSpec<?> status(WebClient client) {
        return client.get().uri("https://127.0.0.1:" + port + InternalApi.STATUS);
    }

    /** A client that trusts the CA, and presents the gateway's certificate if {@code withCertificate}. */
    private static WebClient client(boolean withCertificate) {
        HttpClient http = HttpClient.create().secure(spec -> spec.sslContext(Http11SslContextSpec.forClient()
                .configure(builder -> {
                    builder.trustManager(TestPki.trustManagers(pki.truststore()));
                    if (withCertificate) {
                        builder.keyManager(TestPki.keyManagers(gatewayKeys));
                    }
                })));
        return WebClient.builder().clientConnector(new ReactorClientHttpConnector(http)).build();
    }
}
