package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The sequence state machine and the engine's preconditions: illegal calls fail before touching any state. */
class SequenceLifecycleTest {
    @RegisterExtension
    static final Engines engines = new Engines();

    @Test
    void illegalTransitionsAreRejected() {
        InferenceEngine engine = engines.tiny(1);
        Sequence active = engine.newSequence(SamplingParams.greedy());
        assertThatThrownBy(() -> engine.adopt(active, 10, 5)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("not AWAITING_KV");
        Sequence awaiting = engine.reserve(10, SamplingParams.greedy());
        assertThatThrownBy(() -> engine.prefill(awaiting, new int[] {3, 4}, 0, 2))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("AWAITING_KV");
        assertThatThrownBy(() -> engine.decodeStep(List.of(awaiting))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> engine.adopt(awaiting, 65, 5)).as("beyond the reserved capacity")
                .isInstanceOf(IllegalArgumentException.class);
        engine.free(active);
        engine.free(awaiting);
        assertThatThrownBy(() -> engine.free(active)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("FREED");
        assertThatThrownBy(() -> engine.prefill(active, new int[] {3}, 0, 1)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aFreedSequencesLogitsArrayServesTheNextOneZeroedAndNeverTwoAtOnce() throws Exception {
        InferenceEngine engine = engines.tiny(1);
        int[] prompt = TestData.tokens(8, 1, 259);
        Sequence first = engine.newSequence(SamplingParams.greedy());
        engine.prefill(first, prompt, 0, 8); // this thread computes
        float[] logits = first.logits;
        assertThat(logits).isNotEqualTo(new float[logits.length]);
        engine.free(first);
        assertThat(first.logits).isNull();
        assertThatThrownBy(() -> engine.logits(first)).hasMessageContaining("logits are gone");
        assertThat(engine.spareLogits()).isEqualTo(1);

        Sequence second = engine.reserve(8, SamplingParams.greedy());
        assertThat(second.logits).isSameAs(logits).containsOnly(0f);
        assertThat(engine.spareLogits()).isZero();
        Sequence third = engine.newSequence(SamplingParams.greedy());
        assertThat(third.logits).isNotSameAs(logits);

        // Freed on another thread than the one that computes: not kept (a forward may still write into it).
        Thread other = Thread.ofPlatform().start(() -> engine.free(third));
        other.join();
        assertThat(engine.spareLogits()).isZero();
        engine.free(second);
        assertThat(engine.spareLogits()).isEqualTo(1);
    }

    @Test
    void prefillPreconditionsAreCheckedBeforeAnythingIsComputed() {
        InferenceEngine engine = engines.tiny(1);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        int[] prompt = TestData.tokens(20, 1, 259);
        assertThatThrownBy(() -> engine.prefill(seq, prompt, 5, 10)).hasMessageContaining("has length 0");
        assertThatThrownBy(() -> engine.prefill(seq, prompt, 0, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> engine.prefill(seq, new int[] {3, 999}, 0, 2)).hasMessageContaining("outside");
        assertThatThrownBy(() -> engine.sample(seq)).hasMessageContaining("no unsampled logits");
        assertThatThrownBy(() -> engine.decodeStep(List.of(seq))).hasMessageContaining("no pending token");
        assertThat(seq.length()).isZero();
        assertThat(engine.pagePool().pagesLive()).isZero();
        engine.prefill(seq, prompt, 0, 20);
        engine.sample(seq);
        assertThatThrownBy(() -> engine.decodeStep(List.of(seq, seq))).hasMessageContaining("twice");
        InferenceEngine other = engines.tiny(1);
        assertThatThrownBy(() -> other.decodeStep(List.of(seq))).hasMessageContaining("another engine");
        engine.free(seq);
    }

    @Test
    void aCancelledPrefillFreesEverythingItAllocated() {
        InferenceEngine engine = engines.tiny(2);
        int[] prompt = TestData.tokens(400, 2, 259);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        int chunks = 0;
        for (int from = 0; from < prompt.length; from += 50) {
            if (chunks++ == 3) {
                break; // the scheduler saw the cancel at this safe point
            }
            engine.prefill(seq, prompt, from, from + 50);
        }
        assertThat(seq.length()).isEqualTo(150);
        assertThat(engine.pagePool().pagesLive()).isEqualTo(engine.kvLayout().pagesFor(150));
        engine.free(seq);
        assertThat(engine.pagePool().pagesLive()).isZero();
        assertThat(engine.stats().sequencesLive()).isZero();
    }

    @Test
    void poolExhaustionFailsTheCallWithoutComputingOrLeaking() {
        InferenceEngine engine = engines.create(Preset.TINY, 1, Engines.options().withKvPages(3));
        int[] prompt = TestData.tokens(250, 3, 259);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.prefill(seq, prompt, 0, 128);
        assertThatThrownBy(() -> engine.prefill(seq, prompt, 128, 250)).isInstanceOf(KvPoolExhaustedException.class);
        assertThat(seq.length()).isEqualTo(128);
        assertThat(engine.pagePool().pagesLive()).isEqualTo(2);
        engine.prefill(seq, prompt, 128, 192);
        engine.free(seq);
        assertThatThrownBy(() -> engine.reserve(250, SamplingParams.greedy()))
                .isInstanceOf(KvPoolExhaustedException.class);
        assertThat(engine.pagePool().pagesLive()).isZero();
        assertThat(engine.sequencesLive()).isZero();
    }

    @Test
    void aSequenceStopsAtTheContextLength() {
        InferenceEngine engine = engines.tiny(3);
        int context = engine.config().contextLength();
        int[] prompt = TestData.tokens(context - 2, 4, 259);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        TestData.prefill(engine, seq, prompt, 256);
        engine.sample(seq);
        engine.decodeStep(List.of(seq));
        engine.decodeStep(List.of(seq));
        assertThat(seq.length()).isEqualTo(context);
        assertThatThrownBy(() -> engine.decodeStep(List.of(seq))).hasMessageContaining("context length");
        engine.free(seq);
    }

    @Test
    void forkCopiesTheCacheSoBothBranchesContinueIdentically() {
        InferenceEngine engine = engines.tiny(4);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.prefill(seq, TestData.tokens(90, 5, 259), 0, 90);
        engine.sample(seq);
        Sequence fork = engine.fork(seq, SamplingParams.greedy());
        assertThat(TestData.kv(engine, fork)).containsExactly(TestData.kv(engine, seq));
        for (int i = 0; i < 10; i++) {
            assertThat(engine.decodeStep(List.of(fork))).isEqualTo(engine.decodeStep(List.of(seq)));
        }
        engine.free(seq);
        engine.free(fork);
    }

    @Test
    void concurrentCallersFailFastInsteadOfCorruptingScratch() throws Exception {
        InferenceEngine engine = engines.tiny(5);
        int[] prompt = TestData.tokens(128, 6, 259);
        AtomicInteger rejected = new AtomicInteger();
        AtomicInteger completed = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        Thread[] threads = new Thread[3];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < 10; i++) {
                    Sequence seq = engine.newSequence(SamplingParams.greedy());
                    try {
                        engine.prefill(seq, prompt, 0, 128);
                        completed.incrementAndGet();
                    } catch (IllegalStateException busy) {
                        assertThat(busy).hasMessageContaining("two threads");
                        rejected.incrementAndGet();
                    } finally {
                        engine.free(seq);
                    }
                }
            });
        }
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        assertThat(completed.get() + rejected.get()).isEqualTo(30);
        // The engine is still consistent: a fresh prefill gives the same logits as on an untouched engine.
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.prefill(seq, prompt, 0, 128);
        InferenceEngine fresh = engines.tiny(5);
        Sequence check = fresh.newSequence(SamplingParams.greedy());
        fresh.prefill(check, prompt, 0, 128);
        assertThat(engine.logits(seq)).containsExactly(fresh.logits(check));
        engine.free(seq);
        fresh.free(check);
    }

    @Test
    void aClosedEngineRejectsEveryCall() {
        InferenceEngine engine = InferenceEngine.create(Preset.TINY, 1, Engines.options());
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.close();
        engine.close();
        assertThat(engine.isClosed()).isTrue();
        assertThatThrownBy(() -> engine.newSequence(SamplingParams.greedy())).hasMessageContaining("closed");
        assertThatThrownBy(() -> engine.prefill(seq, new int[] {3}, 0, 1)).hasMessageContaining("closed");
    }

    @Test
    void statsCountTheWorkDone() {
        InferenceEngine engine = engines.create(Preset.TINY, 6, Engines.options());
        EngineStats before = engine.stats();
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        TestData.prefill(engine, seq, TestData.tokens(100, 7, 259), 40);
        engine.sample(seq);
        engine.decodeStep(List.of(seq));
        EngineStats after = engine.stats();
        assertThat(after.prefillChunks() - before.prefillChunks()).isEqualTo(3);
        assertThat(after.prefillTokens() - before.prefillTokens()).isEqualTo(100);
        assertThat(after.decodeTokens() - before.decodeTokens()).isEqualTo(1);
        assertThat(after.pagesLive()).isEqualTo(2);
        assertThat(after.sequencesLive()).isEqualTo(1);
        engine.free(seq);
    }
}
