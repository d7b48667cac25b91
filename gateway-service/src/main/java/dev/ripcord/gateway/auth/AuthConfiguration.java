package dev.ripcord.gateway.auth;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.ssl.SslBundles;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Wires the gateway's security: the {@link ApiKeyFilter} on {@code /v1/**} (keys, per-key rate limits and
 * concurrency), the internal credential on calls to workers ({@link InternalCredentials}) and their optional TLS
 * ({@link InternalTls}).
 *
 * <p>Start-up refuses {@code ripcord.gateway.auth.enabled=true} without any key hash (see {@link AuthProperties});
 * it warns loudly when authentication is off, and when no internal token is set.
 */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(AuthProperties.class)
public class AuthConfiguration {

    private static final Logger log = LoggerFactory.getLogger(AuthConfiguration.class);

    @Bean
    ApiKeyFilter apiKeyFilter(AuthProperties properties, ObjectProvider<MeterRegistry> meters) {
        MeterRegistry registry = meters.getIfUnique(SimpleMeterRegistry::new);
        ApiKeyVerifier verifier = new ApiKeyVerifier(properties.apiKeyHashes());
        if (properties.enabled()) {
            log.info("API keys required on /v1: {} key(s) configured; at most {} completions in flight per key, {}",
                    verifier.size(), properties.maxConcurrentStreams(), describe(properties.rateLimit()));
        } else {
            log.warn("""

                    ********************************************************************************
                    *  AUTHENTICATION IS DISABLED (ripcord.gateway.auth.enabled=false).            *
                    *  Anyone who can reach this gateway can run completions and cancel requests.  *
                    *  Never expose it beyond localhost like this.                                 *
                    ********************************************************************************""");
        }
        return new ApiKeyFilter(properties.enabled(), verifier,
                new RateLimits(properties.rateLimit(), registry),
                new StreamPermits(properties.maxConcurrentStreams(), registry));
    }

    @Bean
    InternalCredentials internalCredentials(@Value("${ripcord.internal.token:}") String token) {
        InternalCredentials credentials = new InternalCredentials(token);
        if (!credentials.hasToken()) {
            log.warn("ripcord.internal.token is not set: calls to workers carry no internal credential, and workers "
                    + "that require one (the default) will answer 401");
        }
        return credentials;
    }

    @Bean
    InternalTls internalTls(@Value("${ripcord.gateway.internal-ssl-bundle:}") String bundle,
                            ObjectProvider<SslBundles> bundles) {
        if (bundle.isBlank()) {
            return InternalTls.none();
        }
        SslBundles registry = bundles.getIfAvailable();
        if (registry == null) {
            throw new IllegalStateException("ripcord.gateway.internal-ssl-bundle=" + bundle
                    + " but no SSL bundles are configured (spring.ssl.bundle.*)");
        }
        InternalTls tls = new InternalTls(bundle, registry.getBundle(bundle));
        log.info("internal calls to workers use TLS with SSL bundle '{}'", bundle);
        return tls;
    }

    private static String describe(AuthProperties.RateLimit rateLimit) {
        return rateLimit.enabled()
                ? "at most %d started per %s per key".formatted(rateLimit.limitForPeriod(),
                        rateLimit.limitRefreshPeriod())
                : "no rate limit";
    }
}
