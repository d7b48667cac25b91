package dev.ripcord.gateway.generation;

import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokens;
import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.tokensThenEos;
import static dev.ripcord.gateway.openai.ScriptedTokenGenerator.unfinished;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;

import dev.ripcord.protocol.CancelReason;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.publisher.PublisherProbe;
import reactor.test.publisher.TestPublisher;

class TextDeltasTest {

    private final ByteTextCodec codec = new ByteTextCodec();

    private Flux<TextDelta> decode(Flux<GeneratedToken> tokens, String... stops) {
        return TextDeltas.decode(tokens, codec::newDetokenizer, List.of(stops));
    }

    @Test
    void stopStringAcrossTokensEmitsTextBeforeItAndCancelsTheGeneration() {
        TestPublisher<GeneratedToken> generation = TestPublisher.create();

        StepVerifier.create(decode(generation.flux(), "END"))
                .then(() -> unfinished("ab E").forEach(generation::next))
                .expectNext(new TextDelta("a", null, 1), new TextDelta("b", null, 2), new TextDelta(" ", null, 3))
                .then(() -> generation.next(new GeneratedToken(4, 'N', null)))
                .expectNoEvent(Duration.ofMillis(20))
                .then(() -> generation.next(new GeneratedToken(5, 'D', null)))
                .expectNext(new TextDelta("", GeneratedToken.STOP, 6))
                .verifyComplete();

        generation.assertCancelled();
    }

    @Test
    void aCancelFromOutsideEndsWithAbortTheHeldBackTextAndTheTokensSoFar() {
        TestPublisher<GeneratedToken> generation = TestPublisher.create();

        StepVerifier.create(decode(generation.flux(), "END"))
                .then(() -> unfinished("ab E").forEach(generation::next))
                .expectNext(new TextDelta("a", null, 1), new TextDelta("b", null, 2), new TextDelta(" ", null, 3))
                .then(() -> generation.error(RequestCancelledException.of("r-1", CancelReason.CLIENT_CANCEL)))
                .as("the held-back 'E' (not a stop string after all) comes with the abort")
                .expectNext(new TextDelta("E", TextDelta.ABORT, 4))
                .verifyComplete();
    }

    @Test
    void aDeadlineEndsWithAbortToo() {
        TestPublisher<GeneratedToken> generation = TestPublisher.create();

        StepVerifier.create(decode(generation.flux()))
                .then(() -> generation.next(new GeneratedToken(0, 'x', null)))
                .expectNext(new TextDelta("x", null, 1))
                .then(() -> generation.error(new DeadlineExceededException("r-2")))
                .expectNext(new TextDelta("", TextDelta.ABORT, 1))
                .verifyComplete();
    }

    @Test
    void anAbortDropsTheBytesOfAnIncompleteCharacterSoTheTextStaysAPrefixOfTheFullAnswer() {
        TestPublisher<GeneratedToken> generation = TestPublisher.create();

        StepVerifier.create(decode(generation.flux()))
                .then(() -> generation.next(new GeneratedToken(0, 'a', null)))
                .expectNext(new TextDelta("a", null, 1))
                .then(() -> generation.next(new GeneratedToken(1, 0xE2, null))) // first byte of a 3-byte sequence
                .expectNoEvent(Duration.ofMillis(20))
                .then(() -> generation.error(RequestCancelledException.of("r-5", CancelReason.CLIENT_CANCEL)))
                .as("no U+FFFD: the character's other bytes were never generated")
                .expectNext(new TextDelta("", TextDelta.ABORT, 2))
                .verifyComplete();
    }

    @Test
    void aCancelBeforeAnyTokenIsAnEmptyAbortWithZeroTokens() {
        StepVerifier.create(decode(Flux.error(new RequestCancelledException("r-3", "client_cancel via kafka"))))
                .expectNext(new TextDelta("", TextDelta.ABORT, 0))
                .verifyComplete();
    }

    @Test
    void aCancelAfterTheLastTokenChangesNothing() {
        Flux<GeneratedToken> lateCancel = Flux.fromIterable(tokens("ok", GeneratedToken.LENGTH))
                .concatWith(Flux.error(RequestCancelledException.of("r-4", CancelReason.CLIENT_CANCEL)));

        StepVerifier.create(decode(lateCancel))
                .expectNext(new TextDelta("o", null, 1), new TextDelta("k", GeneratedToken.LENGTH, 2))
                .verifyComplete();
    }

    @Test
    void otherFailuresStayFailures() {
        WorkerUnavailableException shutdown = new WorkerUnavailableException("the decode worker shut down",
                Duration.ofSeconds(1), null);

        StepVerifier.create(decode(Flux.error(shutdown))).verifyErrorSatisfies(e -> assertThat(e).isSameAs(shutdown));
    }

    @Test
    void eosEndsWithFinishReasonStopAndNoCancel() {
        PublisherProbe<GeneratedToken> generation = PublisherProbe.of(Flux.fromIterable(tokensThenEos("ok")));

        StepVerifier.create(decode(generation.flux()))
                .expectNext(new TextDelta("o", null, 1), new TextDelta("k", null, 2))
                .expectNext(new TextDelta("", GeneratedToken.STOP, 3))
                .verifyComplete();

        generation.assertWasNotCancelled();
    }

    @Test
    void lengthEndsWithFinishReasonLengthAndItsText() {
        StepVerifier.create(decode(Flux.fromIterable(tokens("xy", GeneratedToken.LENGTH))))
                .expectNext(new TextDelta("x", null, 1))
                .expectNext(new TextDelta("y", GeneratedToken.LENGTH, 2))
                .verifyComplete();
    }

    @Test
    void incompleteUtf8SequencesProduceNoEmptyDeltas() {
        StepVerifier.create(decode(Flux.fromIterable(tokensThenEos("€!"))))
                .expectNext(new TextDelta("€", null, 3))
                .expectNext(new TextDelta("!", null, 4))
                .expectNext(new TextDelta("", GeneratedToken.STOP, 5))
                .verifyComplete();
    }

    @Test
    void bytesLeftAtTheEndAreFlushedWithTheLastDelta() {
        List<GeneratedToken> truncated = List.of(new GeneratedToken(0, 'a', null),
                new GeneratedToken(1, 0xE2, GeneratedToken.LENGTH)); // first byte of a 3-byte sequence

        StepVerifier.create(decode(Flux.fromIterable(truncated)))
                .expectNext(new TextDelta("a", null, 1))
                .expectNext(new TextDelta("\uFFFD", GeneratedToken.LENGTH, 2))
                .verifyComplete();
    }

    @Test
    void heldBackTextIsReleasedOnANaturalEnd() {
        StepVerifier.create(decode(Flux.fromIterable(tokens("a E", GeneratedToken.LENGTH)), "END"))
                .expectNext(new TextDelta("a", null, 1), new TextDelta(" ", null, 2))
                .expectNext(new TextDelta("E", GeneratedToken.LENGTH, 3))
                .verifyComplete();
    }

    @Test
    void stopStringInsideTheLastTokenStillWins() {
        StepVerifier.create(decode(Flux.fromIterable(tokens("a.", GeneratedToken.LENGTH)), "."))
                .expectNext(new TextDelta("a", null, 1))
                .expectNext(new TextDelta("", GeneratedToken.STOP, 2))
                .verifyComplete();
    }

    @Test
    void completionWithoutFinishReasonIsAnError() {
        StepVerifier.create(decode(Flux.fromIterable(unfinished("a"))))
                .expectNext(new TextDelta("a", null, 1))
                .verifyErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
                        .hasMessageContaining("finish reason"));
    }

    @Test
    void generatorErrorPassesThrough() {
        WorkerUnavailableException overloaded = new WorkerUnavailableException("busy", Duration.ofSeconds(1), null);

        StepVerifier.create(decode(Flux.error(overloaded))).verifyErrorSatisfies(e -> assertThat(e).isSameAs(overloaded));
    }

    @Test
    void eachSubscriptionGetsItsOwnDetokenizerAndScanner() {
        Flux<TextDelta> deltas = decode(Flux.fromIterable(tokensThenEos("ab")), "b");

        for (int i = 0; i < 2; i++) {
            StepVerifier.create(deltas)
                    .expectNext(new TextDelta("a", null, 1), new TextDelta("", GeneratedToken.STOP, 2))
                    .verifyComplete();
        }
    }
}
