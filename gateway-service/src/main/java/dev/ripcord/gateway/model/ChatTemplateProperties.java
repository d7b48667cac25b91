package dev.ripcord.gateway.model;

import java.nio.file.Path;
import java.time.Duration;

import dev.ripcord.tokenizer.chat.ChatTemplateLimits;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.ConstructorBinding;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * How {@code /v1/chat/completions} turns messages into a prompt (see docs/openai.md), and the sandbox the chat
 * template renders in (docs/security.md).
 *
 * @param chatTemplate    a Jinja chat template file that overrides the model's own {@code tokenizer.chat_template};
 *                        without one, the model's template is used, and a model without a template gets the
 *                        documented plain ChatML fallback
 * @param templateLimits  what one render may use; going past it fails the request
 * @param templateThreads the threads that render chat templates, off the event loops; at most this many renders
 *                        run at once, and up to {@code templateQueue} more wait
 * @param templateQueue   renders that may wait for a thread; past that a chat request gets a 503
 */
@ConfigurationProperties("ripcord.openai")
public record ChatTemplateProperties(@Nullable Path chatTemplate, @DefaultValue TemplateLimits templateLimits,
        @DefaultValue("2") int templateThreads, @DefaultValue("256") int templateQueue) {

    @ConstructorBinding
    public ChatTemplateProperties {
        if (templateThreads < 1 || templateQueue < 1) {
            throw new IllegalArgumentException("ripcord.openai.template-threads and template-queue must be at least 1, "
                    + "got " + templateThreads + " and " + templateQueue);
        }
    }

    /** The defaults, with {@code chatTemplate} (null for the model's own). */
    public ChatTemplateProperties(@Nullable Path chatTemplate) {
        this(chatTemplate, TemplateLimits.DEFAULTS, 2, 256);
    }

    /**
     * {@link ChatTemplateLimits} as properties; the defaults are {@link ChatTemplateLimits#DEFAULTS}.
     *
     * @param maxOutputChars the rendered prompt, in characters
     * @param maxStringChars any one string the template builds
     * @param maxListSize    any one list or map the template builds
     * @param maxSteps       template nodes rendered plus loop iterations
     * @param timeBudget     wall-clock time of one render
     */
    public record TemplateLimits(@DefaultValue("8000000") long maxOutputChars,
            @DefaultValue("8000000") long maxStringChars, @DefaultValue("100000") int maxListSize,
            @DefaultValue("1000000") long maxSteps, @DefaultValue("2s") Duration timeBudget) {

        static final TemplateLimits DEFAULTS = new TemplateLimits(ChatTemplateLimits.DEFAULTS.maxOutputChars(),
                ChatTemplateLimits.DEFAULTS.maxStringChars(), ChatTemplateLimits.DEFAULTS.maxListSize(),
                ChatTemplateLimits.DEFAULTS.maxSteps(), ChatTemplateLimits.DEFAULTS.timeBudget());

        public TemplateLimits {
            toLimits(maxOutputChars, maxStringChars, maxListSize, maxSteps, timeBudget); // validates
        }

        public ChatTemplateLimits toLimits() {
            return toLimits(maxOutputChars, maxStringChars, maxListSize, maxSteps, timeBudget);
        }

        private static ChatTemplateLimits toLimits(long maxOutputChars, long maxStringChars, int maxListSize,
                long maxSteps, Duration timeBudget) {
            return new ChatTemplateLimits(maxOutputChars, maxStringChars, maxListSize, maxSteps, timeBudget);
        }
    }
}
