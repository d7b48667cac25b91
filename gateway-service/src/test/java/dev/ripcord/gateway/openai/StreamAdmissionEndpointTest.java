package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import dev.ripcord.gateway.generation.Admission;
import dev.ripcord.gateway.generation.GeneratedToken;
import dev.ripcord.gateway.generation.GenerationFailedException;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.FluxExchangeResult;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import tools.jackson.databind.JsonNode;

/**
 * A stream's status and headers go out when the serving core says its workers have admitted the request
 * ({@link Admission}), before the first token; a failure after that is an error event and {@code [DONE]}, and a
 * failure before it is still an HTTP status.
 */
class StreamAdmissionEndpointTest extends OpenAiEndpointTest {

    @Test
    void anAdmittedStreamHasItsStatusAndHeadersBeforeItsFirstToken() {
        Sinks.Many<GeneratedToken> tokens = Sinks.many().unicast().onBackpressureBuffer();
        generator.script(request -> Flux.deferContextual(view -> {
            Admission.admitted(view);
            return tokens.asFlux(); // no token until the test sends one
        }));

        FluxExchangeResult<String> result = client.post().uri("/v1/completions")
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue("""
                        {"model":"ripcord-small","prompt":"p","max_tokens":1,"stream":true}""")
                .exchange()
                .expectStatus().isOk()
                .expectHeader().contentTypeCompatibleWith(MediaType.TEXT_EVENT_STREAM)
                .returnResult(String.class);
        assertThat(generator.lastRequest()).as("the generation runs, no token sent yet").isNotNull();

        tokens.tryEmitNext(new GeneratedToken(0, 'x', GeneratedToken.LENGTH, null));
        tokens.tryEmitComplete();
        String body = String.join("", result.getResponseBody().collectList().block());
        assertThat(body).contains("\"text\":\"x\"").contains("[DONE]");
    }

    @Test
    void aFailureAfterAdmissionIsAnErrorEventAndDone() {
        generator.script(request -> Flux.deferContextual(view -> {
            Admission.admitted(view);
            return Flux.error(new GenerationFailedException("the prefill worker failed this request", null));
        }));

        WebTestClient.ResponseSpec response = post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p","stream":true}""");

        response.expectStatus().isOk();
        List<JsonNode> chunks = chunks(raw(response));
        JsonNode error = chunks.getLast().get("error");
        assertThat(error.get("type").stringValue()).isEqualTo("server_error");
        assertThat(error.get("code").stringValue()).isEqualTo("internal_error");
    }

    @Test
    void aFailureBeforeAdmissionIsStillAStatus() {
        generator.script(request -> Flux.error(new GenerationFailedException("the decode worker failed", null)));

        assertError(post("/v1/completions", """
                {"model":"ripcord-small","prompt":"p","stream":true}"""), 500, "server_error", "internal_error", null);
    }
}
