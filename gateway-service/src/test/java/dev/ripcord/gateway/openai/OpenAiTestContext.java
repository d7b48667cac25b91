package dev.ripcord.gateway.openai;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;

import dev.ripcord.gateway.generation.ByteTextCodec;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.web.reactive.config.EnableWebFlux;

/**
 * The smallest context that serves the OpenAI surface like the application does: WebFlux's dispatcher (so unknown
 * paths and wrong methods go through the framework), {@link OpenAiConfiguration}, and fakes for the seam. No Boot
 * auto-configuration, so beans other teams add to the gateway never load here.
 */
@Configuration(proxyBeanMethods = false)
@EnableWebFlux
@Import(OpenAiConfiguration.class)
class OpenAiTestContext {

    static final long CREATED = 1_700_000_000L;

    @Bean
    ByteTextCodec textCodec() {
        return new ByteTextCodec();
    }

    @Bean
    ScriptedTokenGenerator tokenGenerator() {
        return new ScriptedTokenGenerator();
    }

    @Bean
    Clock clock() {
        return Clock.fixed(Instant.ofEpochSecond(CREATED), ZoneOffset.UTC);
    }
}
