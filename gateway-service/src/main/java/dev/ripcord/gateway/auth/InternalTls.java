package dev.ripcord.gateway.auth;

import javax.net.ssl.SSLException;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslOptions;
import reactor.netty.http.client.HttpClient;

/**
 * TLS, and mutual TLS, for the gateway's calls to workers: the Spring Boot SSL bundle named by
 * {@code ripcord.gateway.internal-ssl-bundle} supplies the trust store (which CA signs the workers' certificates)
 * and, for mTLS, the key store (the gateway's client certificate). Without a bundle, {@link #apply} changes nothing
 * and internal calls are plain HTTP.
 *
 * <p>Workers then list {@code https://} URLs in {@code ripcord.gateway.prefill-workers} and
 * {@code decode-workers}; their side is Boot's own ({@code server.ssl.bundle}, {@code server.ssl.client-auth=need}).
 * Host names are verified: each worker's certificate must name the host the gateway calls it by. See
 * {@code docs/security.md}.
 */
public final class InternalTls {

    private final @Nullable SslContext context;
    private final @Nullable String bundleName;

    InternalTls(@Nullable String bundleName, @Nullable SslBundle bundle) {
        this.bundleName = bundleName;
        this.context = bundle == null ? null : clientContext(bundleName, bundle);
    }

    /** No TLS: {@link #apply} returns its argument. */
    public static InternalTls none() {
        return new InternalTls(null, null);
    }

    /** {@code client} securing every connection with the bundle's key and trust material, or as is without one. */
    public HttpClient apply(HttpClient client) {
        SslContext ssl = context;
        return ssl == null ? client : client.secure(spec -> spec.sslContext(ssl));
    }

    public boolean enabled() {
        return context != null;
    }

    @Override
    public String toString() {
        return context == null ? "InternalTls[off]" : "InternalTls[bundle " + bundleName + "]";
    }

    private static SslContext clientContext(@Nullable String name, SslBundle bundle) {
        SslOptions options = bundle.getOptions();
        try {
            return SslContextBuilder.forClient()
                    .keyManager(bundle.getManagers().getKeyManagerFactory())
                    .trustManager(bundle.getManagers().getTrustManagerFactory())
                    .ciphers(SslOptions.asSet(options.getCiphers()))
                    .protocols(options.getEnabledProtocols())
                    .build();
        } catch (SSLException e) {
            throw new IllegalStateException("cannot build the TLS client context of SSL bundle '" + name + "'", e);
        }
    }
}
