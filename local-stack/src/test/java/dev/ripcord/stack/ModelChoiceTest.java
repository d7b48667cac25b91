package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import dev.ripcord.model.ModelStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code ./ripcord up --model=...} turns into for the services; no stack, no download. */
class ModelChoiceTest {

    @TempDir
    Path tmp;

    /** A store that would fail loudly if anything tried to download (its npm does not exist). */
    private ModelStore offlineStore() {
        return new ModelStore(tmp.resolve("cache"), List.of(tmp.resolve("no-npm").toString()));
    }

    @Test
    void noModelMeansStories15MAndTheOtherArgumentsPassThrough() {
        ModelChoice.Parsed parsed = ModelChoice.parse(new String[] {"--open", "--gateway-port=9000"});

        assertThat(parsed.choice().kind()).isEqualTo(ModelChoice.Kind.STORIES15M);
        assertThat(parsed.choice().needsFetch()).isTrue();
        assertThat(parsed.rest()).containsExactly("--open", "--gateway-port=9000");
    }

    @Test
    void presetsMapOntoThePresetPropertyAndNeedNoFetch() {
        for (String preset : List.of("small", "tiny")) {
            ModelChoice choice = ModelChoice.parse(new String[] {"--model=" + preset}).choice();

            assertThat(choice.needsFetch()).isFalse();
            Map<String, String> properties = choice.properties(offlineStore());
            assertThat(properties).containsExactly(Map.entry("ripcord.engine.preset", preset));
            assertThat(ModelChoice.modelId(properties)).isEqualTo("ripcord-" + preset);
        }
    }

    @Test
    void aCheckpointPathWithItsTokenizerMapsOntoCheckpointAndTokenizer() throws IOException {
        Path checkpoint = Files.writeString(tmp.resolve("my-model.bin"), "x");
        Path tokenizer = Files.writeString(tmp.resolve("tok.bin"), "x");

        ModelChoice choice = ModelChoice.parse(new String[] {"--model=" + checkpoint, "--tokenizer=" + tokenizer})
                .choice();

        Map<String, String> properties = choice.properties(offlineStore());
        assertThat(properties).containsExactly(Map.entry("ripcord.engine.checkpoint", checkpoint.toString()),
                Map.entry("ripcord.engine.tokenizer", tokenizer.toString()));
        assertThat(ModelChoice.modelId(properties)).isEqualTo("my-model");
    }

    @Test
    void aGgufPathGoesThroughTheCheckpointPropertyToo() throws IOException {
        Path gguf = Files.writeString(tmp.resolve("stories15M-f32.gguf"), "GGUF");

        Map<String, String> properties = ModelChoice.parse(new String[] {"--model=" + gguf}).choice()
                .properties(offlineStore());

        assertThat(properties).containsExactly(Map.entry("ripcord.engine.checkpoint", gguf.toString()));
        assertThat(ModelChoice.modelId(properties)).isEqualTo("stories15M-f32");
    }

    @Test
    void enginePropertiesGivenDirectlyAreLeftAsTheyAre() {
        ModelChoice.Parsed parsed = ModelChoice.parse(new String[] {"--ripcord.engine.preset=tiny"});

        assertThat(parsed.choice().kind()).isEqualTo(ModelChoice.Kind.AS_CONFIGURED);
        assertThat(parsed.choice().properties(offlineStore())).isEmpty();
        assertThat(parsed.rest()).containsExactly("--ripcord.engine.preset=tiny");
    }

    @Test
    void aCommandLineModelNameWinsOverTheChoices() {
        StackOptions options = StackOptions.parse(new String[] {"--ripcord.engine.model-name=mine"}, tmp)
                .withModelProperties(Map.of("ripcord.engine.model-name", "stories15M",
                        "ripcord.engine.checkpoint", "/x/model.bin"));

        assertThat(options.properties()).containsEntry("ripcord.engine.model-name", "mine")
                .containsEntry("ripcord.engine.checkpoint", "/x/model.bin");
    }

    @Test
    void contradictionsAndMissingFilesAreClearErrors() {
        assertThatThrownBy(() -> ModelChoice.parse(new String[] {"--model=small", "--ripcord.engine.preset=tiny"}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("conflicts with");
        assertThatThrownBy(() -> ModelChoice.parse(new String[] {"--model=" + tmp.resolve("missing.bin")}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no such file")
                .hasMessageContaining("small, tiny");
        assertThatThrownBy(() -> ModelChoice.parse(new String[] {"--tokenizer=/x/tok.bin"}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--model=PATH");
        assertThatThrownBy(() -> ModelChoice.parse(new String[] {"--model=tiny", "--tokenizer=/x/tok.bin"}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--model=PATH");
    }

    @Test
    void stories15MWithoutNpmIsTheOneLineErrorNamingTheFallback() {
        ModelChoice choice = ModelChoice.parse(new String[] {"--model=stories15M"}).choice();

        assertThatThrownBy(() -> choice.properties(offlineStore()))
                .hasMessageNotContaining("\n").hasMessageContaining("--model=small");
    }
}
