package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The prefill/decode contract: a sequence whose KV pages were copied byte for byte into a second engine built from
 * the same preset and seed decodes exactly the tokens the original would have. The copy goes through the pool's
 * single contiguous segment at {@code poolIndex · pageBytes}, the way kv-transfer-lib addresses a registered
 * region, and the receiver reserves its pages before the bytes arrive.
 */
class DisaggregationTest {
    @RegisterExtension
    static final Engines engines = new Engines();

    /** What a transfer does: raw bytes from the sender's pool region into the receiver's, page by page. */
    static void transfer(InferenceEngine from, Sequence source, InferenceEngine to, Sequence target) {
        KvPagePool sender = from.pagePool();
        KvPagePool receiver = to.pagePool();
        assertThat(receiver.pageBytes()).isEqualTo(sender.pageBytes());
        for (int i = 0; i < source.pageCount(); i++) {
            MemorySegment.copy(sender.segment(), sender.offsetOf(source.poolPage(i)),
                    receiver.segment(), receiver.offsetOf(target.poolPage(i)), sender.pageBytes());
        }
    }

    static List<Integer> decode(InferenceEngine engine, Sequence seq, int steps) {
        List<Integer> tokens = new ArrayList<>();
        tokens.add(seq.pendingToken());
        for (int i = 0; i < steps; i++) {
            tokens.add(engine.decodeStep(List.of(seq))[0]);
        }
        return tokens;
    }

    void assertDisaggregatedEqualsSingleProcess(SamplingParams sampling, int promptLength, int steps) {
        InferenceEngine prefillSide = engines.create(Preset.TINY, 77, Engines.options().withThreads(2));
        // A different thread count on the decode side: it must not matter.
        InferenceEngine decodeSide = engines.create(Preset.TINY, 77, Engines.options().withThreads(1));
        int[] prompt = TestData.tokens(promptLength, 8, 259);

        Sequence original = prefillSide.newSequence(sampling);
        TestData.prefill(prefillSide, original, prompt, 48);
        int first = prefillSide.sample(original);

        Sequence received = decodeSide.reserve(promptLength, sampling);
        assertThat(received.state()).isEqualTo(SequenceState.AWAITING_KV);
        assertThat(received.pageCount()).isEqualTo(original.pageCount());
        transfer(prefillSide, original, decodeSide, received);
        decodeSide.adopt(received, promptLength, sampling.readsPrompt() ? prompt : null, first,
                original.lastLogprobs());
        assertThat(received.lastLogprobs()).isEqualTo(original.lastLogprobs());

        List<Integer> expected = decode(prefillSide, original, steps);
        List<Integer> actual = decode(decodeSide, received, steps);
        assertThat(actual).isEqualTo(expected);
        assertThat(decodeSide.logits(received)).containsExactly(prefillSide.logits(original));
        prefillSide.free(original);
        decodeSide.free(received);
    }

    @Test
    void copiedPagesDecodeExactlyTheGreedyTokensOfTheOriginal() {
        assertDisaggregatedEqualsSingleProcess(SamplingParams.greedy(), 150, 60);
    }

    @Test
    void copiedPagesContinueASeededSampledStreamExactly() {
        assertDisaggregatedEqualsSingleProcess(new SamplingParams(0.9f, 0.95f, 1234), 97, 60);
    }

    @Test
    void copiedPagesContinueWithEveryKnobAndTheHistoryThePenaltiesRead() {
        // The repetition penalty reads the prompt, the others the output so far: a decode side that lost either
        // (or restarted the output history at its first step) samples other tokens.
        SamplingParams all = new SamplingParams(0.8f, 0.9f, 99).withTopK(40).withMinP(0.02f)
                .withPenalties(1.3f, 0.4f, 0.3f).withLogitBias(java.util.Map.of(17, 2.5f, 30, -100f)).withLogprobs(5);
        assertDisaggregatedEqualsSingleProcess(all, 97, 60);
        assertDisaggregatedEqualsSingleProcess(all.withPenalties(1.3f, 0f, 0f).withSeed(0), 60, 30);
    }

    @Test
    void aPromptEndingExactlyOnAPageBoundaryHandsOverCorrectly() {
        assertDisaggregatedEqualsSingleProcess(SamplingParams.greedy(), 128, 20);
    }

    @Test
    void thePagesReallyCarryTheState() {
        // Guards against a receiver that silently recomputes or ignores the KV: without the bytes, tokens differ.
        InferenceEngine prefillSide = engines.tiny(77);
        InferenceEngine decodeSide = engines.tiny(77);
        int[] prompt = TestData.tokens(150, 8, 259);
        Sequence original = prefillSide.newSequence(SamplingParams.greedy());
        TestData.prefill(prefillSide, original, prompt, 150);
        int first = prefillSide.sample(original);
        Sequence empty = decodeSide.reserve(150, SamplingParams.greedy());
        for (int i = 0; i < empty.pageCount(); i++) {
            decodeSide.pagePool().page(empty.poolPage(i)).fill((byte) 0);
        }
        decodeSide.adopt(empty, 150, first);
        assertThat(decode(decodeSide, empty, 30)).isNotEqualTo(decode(prefillSide, original, 30));
        prefillSide.free(original);
        decodeSide.free(empty);
    }

    @Test
    void anAbandonedTransferReturnsItsReservedPages() {
        InferenceEngine engine = engines.tiny(1);
        Sequence reserved = engine.reserve(200, SamplingParams.greedy());
        assertThat(engine.pagePool().pagesLive()).isEqualTo(engine.kvLayout().pagesFor(200));
        engine.free(reserved);
        assertThat(engine.pagePool().pagesLive()).isZero();
        assertThat(reserved.state()).isEqualTo(SequenceState.FREED);
    }

    @Test
    void samePresetAndSeedGiveBitIdenticalWeightsAcrossEngines() {
        int[] prompt = TestData.tokens(40, 2, 259);
        float[][] logits = new float[2][];
        for (int i = 0; i < 2; i++) {
            InferenceEngine engine = engines.create(Preset.TINY, 5, Engines.options().withThreads(1 + i));
            Sequence seq = engine.newSequence(SamplingParams.greedy());
            engine.prefill(seq, prompt, 0, prompt.length);
            logits[i] = engine.logits(seq);
            engine.free(seq);
        }
        assertThat(logits[1]).containsExactly(logits[0]);
        InferenceEngine otherSeed = engines.tiny(6);
        Sequence seq = otherSeed.newSequence(SamplingParams.greedy());
        otherSeed.prefill(seq, prompt, 0, prompt.length);
        assertThat(otherSeed.logits(seq)).isNotEqualTo(logits[0]);
        otherSeed.free(seq);
    }
}
