package dev.ripcord.tokenizer.chat;

import java.time.Duration;
import java.util.Objects;

/**
 * What one render of a chat template may use. A chat template is code from a model file, so it runs inside these
 * bounds whatever it says; going past any of them fails the render with a {@link ChatTemplateException} of kind
 * {@link ChatTemplateException.Kind#LIMIT_EXCEEDED}.
 *
 * @param maxOutputChars  the rendered prompt, and any one block or loop's output inside it, in characters
 * @param maxStringChars  any one string the template builds ({@code ~}, {@code +}, {@code *}, {@code join})
 * @param maxListSize     any one list or map the template builds or iterates
 * @param maxSteps        template nodes rendered plus loop iterations run, all loops counted, nested ones too;
 *                        a deterministic bound on the work of a render, independent of the machine's speed
 * @param timeBudget      wall-clock time one render may take; checked at every step, so a render stops at the
 *                        first step after its budget is spent
 */
public record ChatTemplateLimits(long maxOutputChars, long maxStringChars, int maxListSize, long maxSteps,
        Duration timeBudget) {

    /**
     * Bounds no legitimate conversation reaches (the gateway caps a request body at 1 MB; these allow a prompt
     * several times that), and that stop the hostile templates the tests use within a fraction of a second.
     */
    public static final ChatTemplateLimits DEFAULTS = new ChatTemplateLimits(8_000_000, 8_000_000, 100_000,
            1_000_000, Duration.ofSeconds(2));

    public ChatTemplateLimits {
        Objects.requireNonNull(timeBudget, "timeBudget");
        if (maxOutputChars <= 0 || maxStringChars <= 0 || maxListSize <= 0 || maxSteps <= 0
                || timeBudget.isNegative() || timeBudget.isZero()) {
            throw new IllegalArgumentException("chat template limits must be positive: " + maxOutputChars + ", "
                    + maxStringChars + ", " + maxListSize + ", " + maxSteps + ", " + timeBudget);
        }
    }
}
