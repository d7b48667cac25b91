package dev.ripcord.gateway.openai;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.ripcord.gateway.generation.DeadlineExceededException;
import dev.ripcord.gateway.generation.GenerationFailedException;
import dev.ripcord.gateway.generation.GenerationRequest;
import dev.ripcord.gateway.generation.RequestCancelledException;
import dev.ripcord.gateway.generation.RequestOutcome;
import dev.ripcord.gateway.generation.RequestOutcome.FinishReason;
import dev.ripcord.gateway.generation.TextDelta;
import dev.ripcord.gateway.generation.WorkerUnavailableException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * Each generation's outcome is reported once, with the finish reason and error code the client saw: the metric
 * {@code ripcord.request.success} counts exactly these.
 */
class OutcomeReportingTest {

    private final List<RequestOutcome> outcomes = new CopyOnWriteArrayList<>();
    private final GenerationRequest request = new GenerationRequest("req-o", "m", new int[] {1, 2, 3}, 8, 0, 1,
            OptionalLong.empty(), List.of(), false, false, false, null, null, GenerationRequest.Kind.COMPLETION);

    private Flux<TextDelta> observed(Flux<TextDelta> deltas) {
        return OutcomeReporting.observe(request, deltas, outcomes::add);
    }

    @Test
    void aFinishedGenerationReportsItsFinishReasonAndTokens() {
        StepVerifier.create(observed(Flux.just(new TextDelta("a", null, 1), new TextDelta("b", "length", 2))))
                .expectNextCount(2).verifyComplete();
        assertThat(outcomes).singleElement().satisfies(o -> {
            assertThat(o.finishReason()).isEqualTo(FinishReason.LENGTH);
            assertThat(o.errorCode()).isEqualTo(RequestOutcome.NO_ERROR);
            assertThat(o.completionTokens()).isEqualTo(2);
            assertThat(o.request()).isSameAs(request);
        });
    }

    @Test
    void aStopStringOrEosIsStopAndAnAbortDeltaIsAbort() {
        StepVerifier.create(observed(Flux.just(new TextDelta("", "stop", 4)))).expectNextCount(1).verifyComplete();
        StepVerifier.create(observed(Flux.just(new TextDelta("", "abort", 1)))).expectNextCount(1).verifyComplete();
        assertThat(outcomes).extracting(RequestOutcome::finishReason)
                .containsExactly(FinishReason.STOP, FinishReason.ABORT);
    }

    @Test
    void cancelsAndDeadlinesAreAbortsWithTheClientsErrorCode() {
        StepVerifier.create(observed(Flux.concat(Flux.just(new TextDelta("a", null, 1)),
                Flux.error(new RequestCancelledException("req-o", "client_cancel")))))
                .expectNextCount(1).verifyError(RequestCancelledException.class);
        StepVerifier.create(observed(Flux.error(new DeadlineExceededException("req-o"))))
                .verifyError(DeadlineExceededException.class);
        assertThat(outcomes).extracting(RequestOutcome::finishReason, RequestOutcome::errorCode, RequestOutcome::completionTokens)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(FinishReason.ABORT, "request_cancelled", 1),
                        org.assertj.core.groups.Tuple.tuple(FinishReason.ABORT, "timeout", 0));
    }

    @Test
    void otherFailuresAreErrorsWithTheClientsErrorCode() {
        StepVerifier.create(observed(Flux.error(new WorkerUnavailableException("no decode worker", Duration.ofSeconds(1),
                null)))).verifyError();
        StepVerifier.create(observed(Flux.error(new GenerationFailedException("decode failed", null)))).verifyError();
        StepVerifier.create(observed(Flux.error(new IllegalStateException("a bug")))).verifyError();
        assertThat(outcomes).extracting(RequestOutcome::finishReason).containsOnly(FinishReason.ERROR);
        assertThat(outcomes).extracting(RequestOutcome::errorCode)
                .containsExactly("service_unavailable", "internal_error", "internal_error");
    }

    @Test
    void theClientGoingAwayIsAnAbortWithoutErrorCodeReportedOnce() {
        Sinks.Many<TextDelta> tokens = Sinks.many().unicast().onBackpressureBuffer();
        StepVerifier.create(observed(tokens.asFlux()))
                .then(() -> tokens.tryEmitNext(new TextDelta("a", null, 1)))
                .expectNextCount(1)
                .thenCancel().verify();
        tokens.tryEmitError(new RequestCancelledException("req-o", "client_disconnect")); // after the cancel: dropped
        assertThat(outcomes).singleElement().satisfies(o -> {
            assertThat(o.finishReason()).isEqualTo(FinishReason.ABORT);
            assertThat(o.errorCode()).isEqualTo(RequestOutcome.NO_ERROR);
            assertThat(o.completionTokens()).isEqualTo(1);
        });
    }

    @Test
    void aCancelAfterTheLastDeltaDoesNotReportASecondOutcome() {
        StepVerifier.create(observed(Flux.concat(Flux.just(new TextDelta("", "stop", 2)), Flux.never())))
                .expectNextCount(1).thenCancel().verify();
        assertThat(outcomes).singleElement().extracting(RequestOutcome::finishReason).isEqualTo(FinishReason.STOP);
    }
}
