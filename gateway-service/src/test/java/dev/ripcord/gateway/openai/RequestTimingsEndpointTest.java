package dev.ripcord.gateway.openai;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import dev.ripcord.gateway.generation.RequestTimings;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import tools.jackson.databind.JsonNode;

/** {@code X-Ripcord-Timing}: the gateway's marks of a streamed request, as one SSE comment before [DONE]. */
class RequestTimingsEndpointTest extends OpenAiEndpointTest {

    @Test
    void askedForTheStreamEndsWithTheEdgesMarksInOrderBeforeDone() {
        generator.replay(tokensThenEos("Hi!"));

        String body = raw(client.post().uri("/v1/completions").contentType(MediaType.APPLICATION_JSON)
                .header(RequestTimings.HEADER, "1")
                .bodyValue("""
                        {"model":"ripcord-small","prompt":"Say hi","max_tokens":10,"stream":true}""")
                .exchange().expectStatus().isOk());

        List<String> events = List.of(body.split("\n\n"));
        assertThat(events.getLast()).isEqualTo("data: [DONE]");
        String comment = events.get(events.size() - 2);
        assertThat(comment).startsWith(RequestTimings.SSE_PREFIX);
        assertThat(events.subList(0, events.size() - 2)).allSatisfy(e -> assertThat(e).startsWith("data: {"));
        JsonNode marks = json(comment.substring(RequestTimings.SSE_PREFIX.length()));
        List<String> names = new ArrayList<>();
        for (Iterator<String> it = marks.propertyNames().iterator(); it.hasNext(); ) {
            names.add(it.next());
        }
        // The scripted generator marks nothing; the edge's own marks, in the order the request passed them.
        assertThat(names).containsExactly("gateway.received", "gateway.parsed", "gateway.sse.first");
        assertThat(names).allSatisfy(name -> assertThat(marks.get(name).longValue()).isPositive());
    }

    @Test
    void notAskedForTheStreamHasNoComment() {
        generator.replay(tokensThenEos("Hi!"));

        WebTestClient.ResponseSpec response = post("/v1/completions", """
                {"model":"ripcord-small","prompt":"Say hi","max_tokens":10,"stream":true}""");

        String body = raw(response.expectStatus().isOk());
        assertThat(body).doesNotContain(": ripcord-timing");
        assertThat(chunks(body)).hasSize(4); // every event is data: framing (chunks() checks each)
    }

    @Test
    void aShortBodyIsParsedOnTheThreadThatReadItALargeOneOffIt() {
        String caller = Thread.currentThread().getName();
        byte[] shortBody = new byte[OpenAiHandler.INLINE_PARSE_BYTES];
        byte[] largeBody = new byte[OpenAiHandler.INLINE_PARSE_BYTES + 1];

        String shortOn = OpenAiHandler.parseOn(shortBody).map(b -> Thread.currentThread().getName()).block();
        String largeOn = OpenAiHandler.parseOn(largeBody).map(b -> Thread.currentThread().getName()).block();
        String fromParallel = Mono.just(shortBody).publishOn(Schedulers.single())
                .flatMap(OpenAiHandler::parseOn).map(b -> Thread.currentThread().getName()).block();

        assertThat(shortOn).isEqualTo(caller);
        assertThat(largeOn).startsWith("parallel-");
        assertThat(fromParallel).startsWith("single-");
    }
}
