package dev.ripcord.decode.http;

import java.time.Duration;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.Sampling;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.Disposable;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A second decode request with the ID of one this worker still holds is refused with 409 and leaves the first one
 * alone: never two jobs for one ID, and never a 500 that a gateway would take for a broken worker.
 */
@DecodeWorkerTest
class DecodeDuplicateRequestTest {

    @LocalServerPort
    int port;

    @Autowired
    CancellationRegistry registry;

    @Test
    void aDuplicateIdIsRefusedWith409AndTheFirstJobIsUntouched() {
        String id = "dup-decode-1";
        WebClient client = WebClient.create("http://127.0.0.1:" + port);
        DecodeRequest body = new DecodeRequest(id, 4, 4, new Sampling(0.0, 1.0, 7L), false);
        Disposable first = client.post().uri(InternalApi.DECODE)
                .header(RequestIds.HEADER, id)
                .header("X-Ripcord-Internal-Token", DecodeWorkerTest.INTERNAL_TOKEN)
                .contentType(MediaType.APPLICATION_JSON)
                .accept(MediaType.parseMediaType(InternalApi.NDJSON))
                .bodyValue(body)
                .retrieve().bodyToFlux(DecodeEvent.class).subscribe();
        await().atMost(Duration.ofSeconds(30)).until(() -> registry.liveRegistrations() == 1);

        int status = client.post().uri(InternalApi.DECODE)
                .header(RequestIds.HEADER, id)
                .header("X-Ripcord-Internal-Token", DecodeWorkerTest.INTERNAL_TOKEN)
                .contentType(MediaType.APPLICATION_JSON)
                .bodyValue(body)
                .exchangeToMono(response -> response.releaseBody().thenReturn(response.statusCode().value()))
                .block(Duration.ofSeconds(30));

        assertThat(status).isEqualTo(409);
        assertThat(registry.liveRegistrations()).as("the first job still holds its one registration").isEqualTo(1);

        first.dispose(); // the in-band cancel ends the first job
        await().atMost(Duration.ofSeconds(30)).until(() -> registry.liveRegistrations() == 0);
    }
}
