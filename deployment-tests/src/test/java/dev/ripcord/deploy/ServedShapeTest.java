package dev.ripcord.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.engine.Preset;
import dev.ripcord.gateway.model.ServedShape;
import org.junit.jupiter.api.Test;

/**
 * The gateway knows the presets' shapes without the engine library; this guards against the two tables drifting
 * apart (a gateway that admits prompts the workers cannot hold, or rejects ones they can).
 */
class ServedShapeTest {

    @Test
    void gatewayPresetShapesEqualTheEnginePresets() {
        for (Preset preset : Preset.values()) {
            ServedShape shape = ServedShape.preset(preset.id());
            assertThat(shape.vocabSize()).as(preset.id()).isEqualTo(preset.config().vocabSize());
            assertThat(shape.contextLength()).as(preset.id()).isEqualTo(preset.config().contextLength());
        }
    }
}
