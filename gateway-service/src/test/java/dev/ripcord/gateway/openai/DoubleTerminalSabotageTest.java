package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import dev.ripcord.cancel.Sabotage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The bench-only {@code double-terminal} sabotage: armed, the first streamed request that reaches its end gets its
 * terminal frame ({@code [DONE]}) written twice, and no other request does; not armed, every stream has one.
 */
class DoubleTerminalSabotageTest extends OpenAiEndpointTest {

    private static final String STREAMED = """
            {"model":"ripcord-small","prompt":"Say hi","max_tokens":10,"stream":true}""";

    @AfterEach
    void disarm() {
        Sabotage.disarm();
    }

    @Test
    void armedTheFirstStreamThatEndsGetsTwoTerminalFramesAndTheNextOneOne() {
        Sabotage.arm("double-terminal", "1");

        generator.replay(tokensThenEos("Hi!"));
        List<String> first = ssePayloads(raw(post("/v1/completions", STREAMED)));
        generator.replay(tokensThenEos("Hi!"));
        List<String> second = ssePayloads(raw(post("/v1/completions", STREAMED)));

        assertThat(first.subList(first.size() - 2, first.size())).containsExactly("[DONE]", "[DONE]");
        assertThat(first.stream().filter("[DONE]"::equals)).hasSize(2);
        assertThat(second.stream().filter("[DONE]"::equals)).hasSize(1);
        assertThat(second.getLast()).isEqualTo("[DONE]");
        assertThat(first).as("the same stream but for the second frame").hasSize(second.size() + 1);
    }

    @Test
    void notArmedAStreamHasOneTerminalFrame() {
        generator.replay(tokensThenEos("Hi!"));
        List<String> payloads = ssePayloads(raw(post("/v1/completions", STREAMED)));

        assertThat(payloads.stream().filter("[DONE]"::equals)).hasSize(1);
        assertThat(payloads.getLast()).isEqualTo("[DONE]");
    }
}
