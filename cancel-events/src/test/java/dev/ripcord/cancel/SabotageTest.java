package dev.ripcord.cancel;

import dev.ripcord.cancel.kafka.SabotageSwitch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.mock.env.MockEnvironment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The bench-only sabotage switch: refused (the service does not start) unless the fault bench's marker is there, and
 * once armed, one kind breaks its one thing once.
 */
class SabotageTest {

    @AfterEach
    void disarm() {
        Sabotage.disarm();
    }

    @Test
    void aServiceStartedWithASabotageButWithoutTheBenchsMarkerRefusesToStart() {
        MockEnvironment environment = new MockEnvironment().withProperty(Sabotage.PROPERTY, "keep-page");

        // This JVM was not started by the fault bench: RIPCORD_BENCH_STACK is not 1 here, as in production.
        assertThat(System.getenv(Sabotage.BENCH_MARKER)).isNotEqualTo("1");
        assertThatThrownBy(() -> new SabotageSwitch().postProcessEnvironment(environment, new SpringApplication()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("ripcord.sabotage=keep-page is refused")
                .hasMessageContaining(Sabotage.BENCH_MARKER);
        assertThat(Sabotage.KEEP_PAGE.armed()).isFalse();
        assertThatThrownBy(() -> Sabotage.arm("error-500", "0")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Sabotage.arm("error-500", null)).isInstanceOf(IllegalStateException.class);
        assertThat(Sabotage.ERROR_500.armed()).isFalse();
    }

    @Test
    void withoutTheSwitchNothingIsArmedAndNothingFires() {
        new SabotageSwitch().postProcessEnvironment(new MockEnvironment(), new SpringApplication());

        for (Sabotage kind : Sabotage.values()) {
            assertThat(kind.armed()).as(kind.id).isFalse();
            assertThat(kind.fire()).as(kind.id).isFalse();
        }
    }

    @Test
    void withTheBenchsMarkerTheNamedKindIsArmedAndFiresExactlyOnce() {
        Sabotage.arm("keep-page", "1");

        assertThat(Sabotage.KEEP_PAGE.armed()).isTrue();
        assertThat(Sabotage.ERROR_500.armed()).isFalse();
        assertThat(Sabotage.KEEP_PAGE.fire()).isTrue();
        assertThat(Sabotage.KEEP_PAGE.fire()).isFalse();
        assertThat(Sabotage.ERROR_500.fire()).isFalse();
    }

    @Test
    void eachKindIsNamedByItsIdAndStartedWithOneService() {
        assertThat(Sabotage.values()).extracting(s -> s.id).containsExactly("keep-page", "flip-token", "error-500",
                "drop-events", "drop-cancel", "chunk-after-cancel", "double-terminal");
        assertThat(Sabotage.of("drop-cancel")).isSameAs(Sabotage.DROP_CANCEL);
        assertThat(Sabotage.of(" Chunk-After-Cancel ")).isSameAs(Sabotage.CHUNK_AFTER_CANCEL);
        assertThat(Sabotage.of("double-terminal")).isSameAs(Sabotage.DOUBLE_TERMINAL);
        assertThat(Sabotage.DROP_CANCEL.service).isEqualTo("decode");
        assertThat(Sabotage.CHUNK_AFTER_CANCEL.service).isEqualTo("prefill");
        assertThat(Sabotage.DOUBLE_TERMINAL.service).isEqualTo("gateway");
    }

    @Test
    void anUnknownKindIsRefusedByName() {
        assertThatThrownBy(() -> Sabotage.arm("keep-pages", "1")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown sabotage 'keep-pages'").hasMessageContaining("keep-page");
    }
}
