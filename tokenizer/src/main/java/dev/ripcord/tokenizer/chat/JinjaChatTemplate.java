package dev.ripcord.tokenizer.chat;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaProcessors;
import com.hubspot.jinjava.interpret.CollectionTooBigException;
import com.hubspot.jinjava.interpret.OutputTooBigException;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.loader.ResourceLocator;
import com.hubspot.jinjava.objects.serialization.LengthLimitingJsonProcessingException;

/**
 * A model's own chat template ({@code tokenizer.chat_template}, Jinja) rendered with HubSpot's Jinjava, set up as
 * Hugging Face transformers' {@code apply_chat_template} sets up Python's Jinja2: {@code trim_blocks} and
 * {@code lstrip_blocks} on; variables {@code messages} (each with {@code role} and {@code content}),
 * {@code add_generation_prompt}, {@code bos_token}, {@code eos_token}, {@code tools} and {@code documents} (none);
 * globals {@code raise_exception(message)} and {@code strftime_now(format)}; and Jinjava's {@code tojson} filter.
 * Tests render the Llama 3.2, Qwen2 and SmolLM2 Instruct templates to exactly the strings Jinja2 produces.
 *
 * <p>Not supported: Python string methods called on values ({@code .strip()}, {@code .startswith()}; none of the
 * templates above use them), tools and multi-part content. Immutable and thread-safe; rendering parses the
 * template each time (well under a millisecond for these templates).
 *
 * <p>Sandbox. A template comes from a model file, so it is treated as untrusted code: Jinjava (2.8.4, past the
 * published sandbox escapes through the interpreter object and the {@code for} tag) never reaches Java objects
 * beyond the variables above; {@code include}, {@code import} and {@code from} load nothing (the resource locator
 * refuses every name, and the render fails); template syntax inside values is never rendered again; and every render
 * runs within {@link ChatTemplateLimits}: output, string and list sizes, a step count and a time budget. Rendering is
 * CPU work up to that budget: callers keep it off event-loop threads.
 */
public final class JinjaChatTemplate {
    /**
     * Jinja2's {@code lstrip_blocks}: spaces and tabs from the start of a line up to a block or comment tag are
     * removed, unless the tag opens with {@code +}.
     */
    private static final Pattern LSTRIP = Pattern.compile("(?m)^[ \\t]+(?=\\{[%#](?!\\+))");

    /** The template with Jinja2's lstrip_blocks applied. */
    private final String source;
    private final String bosToken;
    private final String eosToken;
    private final ChatTemplateLimits limits;
    private final Jinjava jinjava;

    private JinjaChatTemplate(String source, String bosToken, String eosToken, ChatTemplateLimits limits) {
        this.source = source;
        this.bosToken = bosToken;
        this.eosToken = eosToken;
        this.limits = limits;
        this.jinjava = newJinjava(limits);
    }

    /**
     * A template with the model's BOS and EOS text (as its vocabulary spells them; {@code null} where the model has
     * none, which templates see as {@code none}).
     *
     * @throws ChatTemplateException if the template does not parse or fails on a one-message conversation (other
     *                               than by calling {@code raise_exception})
     */
    public static JinjaChatTemplate of(String source, String bosToken, String eosToken) {
        return of(source, bosToken, eosToken, ChatTemplateLimits.DEFAULTS);
    }

    /**
     * A template rendered within {@code limits}.
     *
     * @throws ChatTemplateException if the template does not parse, fails on a one-message conversation (other than
     *                               by calling {@code raise_exception}), or goes past a limit doing so
     */
    public static JinjaChatTemplate of(String source, String bosToken, String eosToken, ChatTemplateLimits limits) {
        JinjaChatTemplate template = new JinjaChatTemplate(LSTRIP.matcher(source).replaceAll(""), bosToken,
                eosToken, limits);
        try { // a template that does not parse fails here, at load, not at the first request
            template.render(List.of(new ChatMessage("user", "probe")), true);
        } catch (ChatTemplateException e) {
            if (!e.raisedByTemplate()) {
                throw e;
            } // the template parses but refuses a lone user message (some insist on a system prompt): fine
        }
        return template;
    }

    /** The limits every render of this template runs within. */
    public ChatTemplateLimits limits() {
        return limits;
    }

    private static Jinjava newJinjava(ChatTemplateLimits limits) {
        // Jinjava's defaults differ from Jinja2 in places chat templates rely on; these overrides restore Jinja2's
        // behaviour: '-' whitespace control on {{ }} and {# #} (Llama 3's template is made of them), strict parsing of
        // that control, adjacent text nodes, None loop values, and Python-style output of values. Natural operator
        // precedence stays off: with it Jinjava reads `not x is defined` as `(not x) is defined`, unlike Jinja2.
        LegacyOverrides jinja2 = LegacyOverrides.newBuilder()
                .withUseTrimmingForNotesAndExpressions(true)
                .withParseWhitespaceControlStrictly(true)
                .withAllowAdjacentTextNodes(true)
                .withKeepNullableLoopValues(true)
                .withUsePyishObjectMapper(true)
                .build();
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                // Jinjava's lstrip_blocks also eats spaces before a tag in the middle of a line ("[a] {% endif %}"),
                // unlike Jinja2; LSTRIP above does it Jinja2's way on the source instead.
                .withLstripBlocks(false)
                .withFailOnUnknownTokens(false)
                // Jinjava by default renders template syntax found in values again: a user writing "{{ ... }}" or
                // "{% raw %}" would inject template code. Jinja2 never does that; neither must we.
                .withNestedInterpretationEnabled(false)
                .withLegacyOverrides(jinja2)
                // Jinjava counts characters against these "byte" limits; both bound memory, which is the point.
                .withMaxOutputSize(limits.maxOutputChars())
                .withMaxStringLength(limits.maxStringChars())
                .withMaxListSize(limits.maxListSize())
                .withMaxMapSize(limits.maxListSize())
                .withProcessors(JinjavaProcessors.newBuilder()
                        .withNodePreProcessor((node, interpreter) -> RenderBudget.charge()).build())
                .build();
        Jinjava jinjava = new Jinjava(config);
        jinjava.setResourceLocator(NO_RESOURCES);
        jinjava.getGlobalContext().registerTag(new RenderBudget.ChargedForTag());
        jinjava.getGlobalContext().registerFunction(new ELFunctionDefinition("", "raise_exception",
                TemplateFunctions.class, "raiseException", String.class));
        jinjava.getGlobalContext().registerFunction(new ELFunctionDefinition("", "strftime_now",
                TemplateFunctions.class, "strftimeNow", String.class));
        return jinjava;
    }

    /**
     * {@code include}, {@code import} and {@code from} name a template to load; a chat template has no business
     * loading anything (Jinjava's default locator reads the classpath and files), so every name is refused. The
     * exception is unchecked so that Jinjava fails the render instead of rendering the tag as empty.
     */
    private static final ResourceLocator NO_RESOURCES = (name, encoding, interpreter) -> {
        throw new ChatTemplateException("chat templates cannot load other templates (asked for '%s')"
                .formatted(name.length() > 80 ? name.substring(0, 80) + "..." : name),
                ChatTemplateException.Kind.FORBIDDEN);
    };

    /** Renders {@code messages}, ending with the assistant's turn header if {@code addGenerationPrompt}. */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        return render(messages, addGenerationPrompt, Map.of());
    }

    /**
     * Renders with extra template variables (for example Llama 3's {@code date_string}), as
     * {@code apply_chat_template(**kwargs)} passes them.
     *
     * @throws ChatTemplateException if the template raises an exception, fails to render, goes past a limit or
     *                               asks for something forbidden; {@link ChatTemplateException#kind()} says which
     */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt, Map<String, Object> variables) {
        List<Map<String, Object>> list = new ArrayList<>(messages.size());
        for (ChatMessage m : messages) {
            Map<String, Object> message = new LinkedHashMap<>();
            message.put("role", m.role());
            message.put("content", m.content());
            list.add(message);
        }
        Map<String, Object> context = new HashMap<>(variables);
        context.put("messages", list);
        context.put("add_generation_prompt", addGenerationPrompt);
        context.put("bos_token", bosToken);
        context.put("eos_token", eosToken);
        context.put("tools", null);
        context.put("documents", null);
        RenderResult result;
        RenderBudget.CURRENT.set(new RenderBudget(limits));
        try {
            result = jinjava.renderForResult(source, context);
        } finally {
            RenderBudget.CURRENT.remove();
        }
        for (TemplateError error : result.getErrors()) {
            ChatTemplateException failure = failure(error);
            if (failure != null) {
                throw failure;
            }
        }
        return result.getOutput();
    }

    /**
     * The exception a Jinjava error amounts to, or null for a warning that leaves the output as Jinja2 would have it.
     * Size limits fail the render even where Jinjava files them as warnings (it then leaves part of the output out).
     */
    private static ChatTemplateException failure(TemplateError error) {
        boolean tooBig = false;
        for (Throwable cause = error.getException(); cause != null; cause = cause.getCause()) {
            if (cause instanceof ChatTemplateException e) {
                return e;
            }
            tooBig |= cause instanceof OutputTooBigException || cause instanceof CollectionTooBigException
                    || cause instanceof LengthLimitingJsonProcessingException;
        }
        if (tooBig) {
            return new ChatTemplateException("chat template went past a size limit at line %d: %s".formatted(
                    error.getLineno(), brief(error.getMessage())), ChatTemplateException.Kind.LIMIT_EXCEEDED);
        }
        return switch (error.getReason()) {
            case OUTPUT_TOO_BIG, COLLECTION_TOO_BIG, OVER_LIMIT -> new ChatTemplateException(
                    "chat template went past a size limit at line %d: %s".formatted(error.getLineno(),
                            brief(error.getMessage())), ChatTemplateException.Kind.LIMIT_EXCEEDED);
            default -> error.getSeverity() == TemplateError.ErrorType.FATAL
                    ? new ChatTemplateException("chat template failed at line %d: %s".formatted(error.getLineno(),
                            brief(error.getMessage())))
                    : null;
        };
    }

    /** Jinjava's messages quote the values involved, which may be as large as the limits. */
    private static String brief(String message) {
        return message == null || message.length() <= 200 ? message : message.substring(0, 200) + "...";
    }
}
