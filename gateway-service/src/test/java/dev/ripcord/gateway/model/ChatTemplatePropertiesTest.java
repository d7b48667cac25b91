package dev.ripcord.gateway.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;

import dev.ripcord.tokenizer.chat.ChatTemplateLimits;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/** {@code ripcord.openai.*} binds to the template limits the tokenizer renders with; defaults are the library's. */
class ChatTemplatePropertiesTest {

    private static ChatTemplateProperties bind(Map<String, String> properties) {
        return new Binder(new MapConfigurationPropertySource(properties))
                .bindOrCreate("ripcord.openai", ChatTemplateProperties.class);
    }

    @Test
    void withoutPropertiesTheLimitsAreTheTokenizersDefaults() {
        ChatTemplateProperties chat = bind(Map.of());
        assertThat(chat.templateLimits().toLimits()).isEqualTo(ChatTemplateLimits.DEFAULTS);
        assertThat(chat.templateThreads()).isEqualTo(2);
        assertThat(chat.templateQueue()).isEqualTo(256);
        assertThat(new ChatTemplateProperties(null)).isEqualTo(chat);
    }

    @Test
    void eachLimitBindsAndNonPositiveOnesAreRefused() {
        ChatTemplateProperties chat = bind(Map.of("ripcord.openai.template-limits.max-steps", "5000",
                "ripcord.openai.template-limits.time-budget", "250ms",
                "ripcord.openai.template-limits.max-list-size", "10",
                "ripcord.openai.template-threads", "3"));
        assertThat(chat.templateLimits().toLimits()).isEqualTo(new ChatTemplateLimits(8_000_000, 8_000_000, 10,
                5000, Duration.ofMillis(250)));
        assertThat(chat.templateThreads()).isEqualTo(3);
        assertThatThrownBy(() -> bind(Map.of("ripcord.openai.template-limits.max-steps", "0")))
                .isInstanceOf(BindException.class);
        assertThatThrownBy(() -> bind(Map.of("ripcord.openai.template-threads", "0")))
                .isInstanceOf(BindException.class);
    }
}
