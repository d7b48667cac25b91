package dev.ripcord.tokenizer.chat;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Hostile chat templates, as a model file could carry them: each fails with a {@link ChatTemplateException} of a
 * stated kind, or renders without reaching anything outside the sandbox; none runs Java code of its choosing. The
 * class timeout only keeps a regression from hanging the build; no test measures time.
 */
@Timeout(120)
class ChatTemplateSandboxTest {

    /** What the escapes try to construct: a class whose constructor counts, standing in for any gadget. */
    public static final class Canary {
        static final AtomicInteger CONSTRUCTED = new AtomicInteger();

        public Canary() {
            CONSTRUCTED.incrementAndGet();
        }
    }

    private static final String CANARY = Canary.class.getName();

    /** Renders only for the message "attack", so that loading the template (which renders a probe) succeeds. */
    private static JinjaChatTemplate armed(String payload) {
        return JinjaChatTemplate.of("{% if messages[0]['content'] == 'attack' %}" + payload + "{% endif %}ok",
                "<s>", "</s>");
    }

    private static String attack(JinjaChatTemplate template) {
        return template.render(List.of(new ChatMessage("user", "attack")), true);
    }

    @BeforeEach
    void resetCanary() {
        Canary.CONSTRUCTED.set(0);
    }

    /**
     * CVE-2025-59340 (fixed in Jinjava 2.8.1): the interpreter is a template variable, its config hands out
     * Jinjava's ObjectMapper, and the mapper constructs any class a template names.
     */
    @Test
    void theInterpreterObjectGivesNoWayToConstructAClass() {
        JinjaChatTemplate template = armed("{% set mapper = ____int3rpr3t3r____.config.objectMapper %}"
                + "{{ mapper.readValue('{}', mapper.typeFactory.constructFromCanonical('" + CANARY + "')) }}"
                + "[{{ ____int3rpr3t3r____.config }}]");
        String rendered = renderOrEmpty(template);
        assertThat(Canary.CONSTRUCTED).hasValue(0);
        assertThat(rendered).doesNotContain("JinjavaConfig").doesNotContain("Canary");
    }

    /**
     * CVE-2026-25526 (fixed in Jinjava 2.8.3): the {@code for} tag read loop variables as bean properties without the
     * resolver's restrictions, so {@code for _, config in ____int3rpr3t3r____} reached the config again.
     */
    @Test
    void forLoopVariablesGiveNoWayToConstructAClass() {
        JinjaChatTemplate template = armed("{% for _, config, class in ____int3rpr3t3r____ %}[{{ class }}]"
                + "{% for _, objectMapper in config %}"
                + "{{ objectMapper.readValue('{}', objectMapper.typeFactory.constructFromCanonical('" + CANARY + "')) }}"
                + "{% endfor %}{% endfor %}");
        String rendered = renderOrEmpty(template);
        assertThat(Canary.CONSTRUCTED).hasValue(0);
        assertThat(rendered).doesNotContain("com.hubspot").doesNotContain("Canary");
    }

    @Test
    void includeImportAndFromLoadNothing() {
        // a file that is on the test classpath: Jinjava's default locator would read it
        String name = "dev/ripcord/tokenizer/chat/README.md";
        for (String payload : List.of("{% include '" + name + "' %}", "{% import '" + name + "' as m %}",
                "{% from '" + name + "' import x %}")) {
            assertThatThrownBy(() -> attack(armed(payload))).as(payload)
                    .isInstanceOfSatisfying(ChatTemplateException.class,
                            e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.FORBIDDEN));
        }
    }

    @Test
    void aTemplateThatIncludesAtTopLevelIsRefusedAtLoad() {
        assertThatThrownBy(() -> JinjaChatTemplate.of("{% include 'dev/ripcord/tokenizer/chat/README.md' %}",
                "<s>", "</s>"))
                .isInstanceOfSatisfying(ChatTemplateException.class,
                        e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.FORBIDDEN));
    }

    private static final String BILLION_EMPTY_ITERATIONS = "{% if messages[0]['content'] == 'attack' %}"
            + "{% for i in range(1000) %}{% for j in range(1000) %}{% for k in range(1000) %}{% endfor %}{% endfor %}"
            + "{% endfor %}{% endif %}ok";

    @Test
    void aBillionEmptyLoopIterationsStopAtTheStepLimit() {
        // a time budget this render never reaches, so that the step count is what stops it, on any machine
        JinjaChatTemplate template = JinjaChatTemplate.of(BILLION_EMPTY_ITERATIONS, "<s>", "</s>",
                new ChatTemplateLimits(8_000_000, 8_000_000, 100_000, 100_000, Duration.ofHours(1)));
        assertThatThrownBy(() -> attack(template)).isInstanceOfSatisfying(ChatTemplateException.class, e -> {
            assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.LIMIT_EXCEEDED);
            assertThat(e.getMessage()).isEqualTo("chat template took more than 100000 steps");
        });
    }

    /** A loop with an empty body renders no node per iteration: each iteration is charged all the same. */
    @Test
    void emptyLoopIterationsAreCountedAsSteps() {
        ChatTemplateLimits limits = new ChatTemplateLimits(8_000_000, 8_000_000, 100_000, 500, Duration.ofHours(1));
        JinjaChatTemplate template = JinjaChatTemplate.of("{% if messages[0]['content'] == 'attack' %}"
                + "{% for i in range(1000) %}{% endfor %}{% endif %}ok", "<s>", "</s>", limits);
        assertThatThrownBy(() -> attack(template)).isInstanceOfSatisfying(ChatTemplateException.class,
                e -> assertThat(e.getMessage()).isEqualTo("chat template took more than 500 steps"));
        // and loop.length, loop.last still see the whole collection through the charging wrapper
        JinjaChatTemplate loopVars = JinjaChatTemplate.of("{% for m in messages %}{{ loop.index }}/{{ loop.length }}"
                + "{% if loop.last %}!{% endif %} {% endfor %}", "<s>", "</s>", limits);
        assertThat(loopVars.render(List.of(new ChatMessage("user", "a"), new ChatMessage("assistant", "b")), false))
                .isEqualTo("1/2 2/2! ");
    }

    @Test
    void aBillionEmptyLoopIterationsStopWithinTheDefaultLimits() {
        JinjaChatTemplate template = JinjaChatTemplate.of(BILLION_EMPTY_ITERATIONS, "<s>", "</s>");
        assertThatThrownBy(() -> attack(template)).isInstanceOfSatisfying(ChatTemplateException.class,
                e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.LIMIT_EXCEEDED));
    }

    @Test
    void aBillionLoopIterationsWithOutputStopAtALimit() {
        JinjaChatTemplate template = armed("{% for i in range(1000) %}{% for j in range(1000) %}"
                + "{% for k in range(1000) %}{{ i }}{{ j }}{{ k }}{% endfor %}{% endfor %}{% endfor %}");
        assertThatThrownBy(() -> attack(template)).isInstanceOfSatisfying(ChatTemplateException.class,
                e -> assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.LIMIT_EXCEEDED));
    }

    @Test
    void aHugeStringStopsAtTheStringLimit() {
        for (String payload : List.of("{% set s = 'xxxxxxxxxx' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s|length }}",
                "{% set s = range(1000)|join('xxxxxxxxxx') %}{% for i in range(20) %}{% set s = [s, s]|join('') %}"
                        + "{% endfor %}{{ s|length }}")) {
            JinjaChatTemplate template = armed(payload);
            assertThatThrownBy(() -> attack(template)).as(payload)
                    .isInstanceOfSatisfying(ChatTemplateException.class,
                            e -> assertThat(e.kind()).as(e.getMessage())
                                    .isEqualTo(ChatTemplateException.Kind.LIMIT_EXCEEDED));
        }
    }

    /** Jinja2 repeats a string multiplied by a number; Jinjava refuses to: the render fails, no string is built. */
    @Test
    void stringMultiplicationFails() {
        JinjaChatTemplate template = armed("{{ 'x' * 1000000000 }}");
        assertThatThrownBy(() -> attack(template)).isInstanceOf(ChatTemplateException.class);
    }

    @Test
    void aLongListStopsAtTheListLimit() {
        JinjaChatTemplate template = JinjaChatTemplate.of("{% if messages[0]['content'] == 'attack' %}"
                + "{% set l = [] %}{% for i in range(1000) %}{% for j in range(1000) %}{% do l.append(j) %}"
                + "{% endfor %}{% endfor %}{% endif %}ok", "<s>", "</s>",
                new ChatTemplateLimits(8_000_000, 8_000_000, 10_000, 10_000_000, Duration.ofMinutes(1)));
        assertThatThrownBy(() -> attack(template)).isInstanceOfSatisfying(ChatTemplateException.class,
                e -> assertThat(e.kind()).as(e.getMessage()).isEqualTo(ChatTemplateException.Kind.LIMIT_EXCEEDED));
    }

    @Test
    void aRenderPastItsTimeBudgetFails() {
        // a budget spent before the first step (the probe render at load): the check is tested, not the clock
        assertThatThrownBy(() -> JinjaChatTemplate.of("{% for i in range(10) %}{{ i }}{% endfor %}", "<s>", "</s>",
                new ChatTemplateLimits(8_000_000, 8_000_000, 10_000, 10_000_000, Duration.ofNanos(1))))
                .isInstanceOfSatisfying(ChatTemplateException.class, e -> {
            assertThat(e.kind()).isEqualTo(ChatTemplateException.Kind.LIMIT_EXCEEDED);
            assertThat(e.getMessage()).contains("time budget");
        });
    }

    @Test
    void limitsAreCheckedAtConstruction() {
        assertThatThrownBy(() -> new ChatTemplateLimits(0, 1, 1, 1, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ChatTemplateLimits(1, 1, 1, 1, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
    }

    private static String renderOrEmpty(JinjaChatTemplate template) {
        try {
            return attack(template);
        } catch (ChatTemplateException e) {
            return "";
        }
    }
}
