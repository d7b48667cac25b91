package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import dev.ripcord.cancel.CancelPropagation;
import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.Sabotage;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.lifecycle.audit.AuditReport;
import dev.ripcord.lifecycle.audit.Auditor;
import dev.ripcord.lifecycle.audit.Invariant;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The bench-only {@code double-terminal} sabotage: armed, the first streamed request that reaches its end gets its
 * terminal frame ({@code [DONE]}) written twice, and no other request does; not armed, every stream has one.
 */
class DoubleTerminalSabotageTest extends OpenAiEndpointTest {

    private static final String STREAMED = """
            {"model":"ripcord-small","prompt":"Say hi","max_tokens":10,"stream":true}""";
    private static final String NOT_STREAMED = """
            {"model":"ripcord-small","prompt":"Say hi","max_tokens":10}""";

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

    /**
     * The lifecycle log's evidence: the writer logs a TERMINAL_FRAME per terminal frame it writes, so the sabotaged
     * stream shows two (its context closed once: one FINISHED), the next stream and a non-streamed answer one each,
     * and the audit's {@code ONE_TERMINAL_OUTCOME} fails the sabotaged request alone.
     */
    @Test
    void armedTheLifecycleLogShowsTwoTerminalFramesForThatRequestAndTheAuditFailsIt() {
        List<LifecycleEvent> sent = new CopyOnWriteArrayList<>();
        LifecyclePublisher log = new LifecyclePublisher("gateway", "g1", 1_000, sent::add, Clock.systemUTC());
        generator.recordOn(new RequestContexts(CancelPublisher.discarding(), new CancelProperties(
                CancelPropagation.IN_BAND, false, "ripcord.cancellations", "ripcord.cancellations.dlt", 3, 1,
                Duration.ofHours(1), Duration.ofDays(7), Duration.ofMinutes(10), Duration.ofMinutes(10), 100_000,
                false, Duration.ofSeconds(30), 10_000, 3, Duration.ofMillis(200), "g1"), new SimpleMeterRegistry(),
                Clock.systemUTC(), Duration.ofHours(1), log));
        Sabotage.arm("double-terminal", "1");

        generator.replay(tokensThenEos("Hi!"));
        assertThat(ssePayloads(raw(post("/v1/completions", STREAMED)))).endsWith("[DONE]", "[DONE]");
        assertThat(ssePayloads(raw(post("/v1/completions", STREAMED)))).endsWith("[DONE]");
        post("/v1/completions", NOT_STREAMED).expectStatus().isOk();
        log.close(Duration.ofSeconds(10));

        Map<String, List<String>> frames = sent.stream().filter(e -> e.type() == LifecycleEventType.TERMINAL_FRAME)
                .collect(Collectors.groupingBy(LifecycleEvent::requestId,
                        Collectors.mapping(LifecycleEvent::detail, Collectors.toList())));
        assertThat(frames.values()).containsExactlyInAnyOrder(List.of("done", "done"), List.of("done"),
                List.of("body"));
        String twice = frames.entrySet().stream().filter(f -> f.getValue().size() == 2).findFirst().orElseThrow()
                .getKey();
        assertThat(sent).filteredOn(e -> e.type() == LifecycleEventType.FINISHED).hasSize(3)
                .filteredOn(e -> e.requestId().equals(twice)).as("one close, one FINISHED").hasSize(1);
        AuditReport report = Auditor.audit(sent, List.of(), new Auditor.Options(null, null, Duration.ZERO));
        assertThat(report.violationsOf(Invariant.ONE_TERMINAL_OUTCOME)).singleElement().satisfies(v -> {
            assertThat(v.requestId()).isEqualTo(twice);
            assertThat(v.message()).contains("2 terminal frames");
        });
    }

    @Test
    void notArmedAStreamHasOneTerminalFrame() {
        generator.replay(tokensThenEos("Hi!"));
        List<String> payloads = ssePayloads(raw(post("/v1/completions", STREAMED)));

        assertThat(payloads.stream().filter("[DONE]"::equals)).hasSize(1);
        assertThat(payloads.getLast()).isEqualTo("[DONE]");
    }
}
