package dev.ripcord.worker.security;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.web.server.WebFilter;

/**
 * The internal credential of a worker: {@link InternalTokenFilter} on {@code /internal/**}, unless
 * {@code ripcord.internal.auth.enabled=false}. A worker refuses to start without {@code ripcord.internal.token}
 * (see {@link InternalAuthProperties}); with the check disabled it warns loudly instead.
 *
 * <p>Transport security (TLS, mutual TLS) is Spring Boot's: {@code server.ssl.bundle} and
 * {@code server.ssl.client-auth=need}; see {@code docs/security.md}.
 */
@AutoConfiguration
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
@EnableConfigurationProperties(InternalAuthProperties.class)
public class InternalSecurityAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(InternalSecurityAutoConfiguration.class);

    @Bean
    WebFilter ripcordInternalTokenFilter(InternalAuthProperties properties) {
        if (properties.auth().enabled()) {
            log.info("/internal/** requires the internal token ({} header){}",
                    dev.ripcord.protocol.InternalApi.INTERNAL_TOKEN_HEADER, properties.previousTokens().isEmpty()
                            ? "" : "; " + properties.previousTokens().size()
                                    + " previous token(s) still accepted (ripcord.internal.previous-tokens)");
            return new InternalTokenFilter(properties.acceptedTokens());
        }
        log.warn("""

                ********************************************************************************
                *  INTERNAL AUTH IS DISABLED (ripcord.internal.auth.enabled=false).            *
                *  Anyone who can reach this worker can submit, read and abort its work.       *
                ********************************************************************************""");
        return (exchange, chain) -> chain.filter(exchange);
    }
}
