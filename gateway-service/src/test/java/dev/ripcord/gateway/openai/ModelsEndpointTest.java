package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.gateway.generation.ByteTextCodec;
import dev.ripcord.protocol.RequestIds;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import tools.jackson.databind.JsonNode;

class ModelsEndpointTest extends OpenAiEndpointTest {

    @Test
    void modelsListsTheServedModel() {
        WebTestClient.ResponseSpec response = client.get().uri("/v1/models").exchange();

        response.expectStatus().isOk().expectHeader().contentType(MediaType.APPLICATION_JSON)
                .expectHeader().value(RequestIds.HEADER, id -> assertThat(id).matches("req-[A-Za-z0-9]{24}"));
        JsonNode body = json(raw(response));
        assertThat(body.get("object").stringValue()).isEqualTo("list");
        assertThat(body.get("data")).hasSize(1);
        JsonNode model = body.get("data").get(0);
        assertThat(model.get("id").stringValue()).isEqualTo("ripcord-small");
        assertThat(model.get("object").stringValue()).isEqualTo("model");
        assertThat(model.get("created").longValue()).isEqualTo(OpenAiTestContext.CREATED);
        assertThat(model.get("owned_by").stringValue()).isEqualTo("ripcord");
        assertThat(model.get("max_model_len").intValue()).isEqualTo(ByteTextCodec.CONTEXT_LENGTH);
    }

    @Test
    void retrievingTheServedModelReturnsIt() {
        JsonNode model = json(raw(client.get().uri("/v1/models/ripcord-small").exchange().expectStatus().isOk()));

        assertThat(model.get("id").stringValue()).isEqualTo("ripcord-small");
    }

    @Test
    void retrievingAnotherModelIs404ModelNotFound() {
        assertError(client.get().uri("/v1/models/gpt-4").exchange(), 404, "invalid_request_error", "model_not_found",
                "model");
    }

    @Test
    void postingToModelsIs405WithAllowGet() {
        WebTestClient.ResponseSpec response = client.post().uri("/v1/models").exchange();

        assertError(response, 405, "invalid_request_error", "method_not_allowed", null);
        response.expectHeader().valueEquals(HttpHeaders.ALLOW, "GET");
    }
}
