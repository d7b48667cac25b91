package dev.ripcord.gateway.model;

import dev.ripcord.gateway.generation.TextCodec;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The served model as the gateway knows it: tokenizer, chat template and limits. */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties({ModelProperties.class, ChatTemplateProperties.class})
public class ModelConfiguration {

    @Bean
    TextCodec textCodec(ModelProperties properties, ChatTemplateProperties chat) {
        return EngineTextCodec.from(properties, chat);
    }
}
