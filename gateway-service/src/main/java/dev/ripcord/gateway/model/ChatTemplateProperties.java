package dev.ripcord.gateway.model;

import java.nio.file.Path;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * How {@code /v1/chat/completions} turns messages into a prompt (see docs/openai.md).
 *
 * @param chatTemplate a Jinja chat template file that overrides the model's own {@code tokenizer.chat_template};
 *                     without one, the model's template is used, and a model without a template gets the
 *                     documented plain ChatML fallback
 */
@ConfigurationProperties("ripcord.openai")
public record ChatTemplateProperties(@Nullable Path chatTemplate) {
}
