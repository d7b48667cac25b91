package dev.ripcord.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;

class SuggestionsTest {

    @Test
    void aTranspositionCountsAsOneEdit() {
        assertThat(Suggestions.distance("modle", "model")).isEqualTo(1);
        assertThat(Suggestions.distance("kafka-prot", "kafka-port")).isEqualTo(1);
        assertThat(Suggestions.distance("", "open")).isEqualTo(4);
    }

    @Test
    void theNearestCandidateIsSuggestedOnlyWhenItLooksLikeATypo() {
        List<String> fields = List.of("max_tokens", "temperature", "top_p", "stream", "stop");

        assertThat(Suggestions.nearest("max_token", fields)).contains("max_tokens");
        assertThat(Suggestions.nearest("temprature", fields)).contains("temperature");
        assertThat(Suggestions.nearest("frobnicate", fields)).isEmpty();
        assertThat(Suggestions.nearest("anything", List.of())).isEmpty();
    }

    @Test
    void everyToolWordsTheSuggestionTheSameWay() {
        assertThat(Suggestions.didYouMean("client", List.of("clients", "seed"), "--"))
                .isEqualTo("; did you mean '--clients'?");
        assertThat(Suggestions.didYouMean("lod", List.of("load", "cancel"), "")).isEqualTo("; did you mean 'load'?");
        assertThat(Suggestions.didYouMean("zzzzzz", List.of("load"), "")).isEmpty();
    }
}
