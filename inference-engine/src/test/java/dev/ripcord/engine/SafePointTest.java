package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The engine's safe points between layers: a stop requested for a sequence ({@link Sequence#requestStop()}) stops
 * its prefill chunk, or a decode step whose every sequence has one, at the next layer boundary, says where, and leaves
 * the sequence exactly as it was before the call (the stopped positions are not counted), so that a copy of it goes
 * on to the same results as a sequence that was never stopped, and free gives every page back. The stop is placed at
 * an exact layer with {@link InferenceEngine#onLayerBoundary}; nothing here depends on timing.
 */
class SafePointTest {
    /** Four layers, so that there are boundaries strictly inside a chunk on either side of the middle. */
    static final ModelConfig FOUR_LAYERS = ModelConfig.llama2c(64, 176, 4, 4, 2, 259, 512, true);
    static final int LAYERS = 4;
    static final int CHUNK = 40;
    static final int ITERATIONS = 60;

    @RegisterExtension
    static final Engines engines = new Engines();

    private static InferenceEngine engine() {
        return engines.create(FOUR_LAYERS, 7, Engines.options().withThreads(1).withPageTokens(16));
    }

    record Snapshot(int length, int pages, int pending, float[] kv, float[] logits) {
        static Snapshot of(InferenceEngine engine, Sequence seq) {
            return new Snapshot(seq.length(), seq.pageCount(), seq.pendingToken(), TestData.kv(engine, seq),
                    engine.logits(seq));
        }
    }

    /** The KV and logits of a sequence that prefilled {@code prompt} in chunks of {@link #CHUNK}, never stopped. */
    private static Snapshot reference(InferenceEngine engine, int[] prompt) {
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        try {
            TestData.prefill(engine, seq, prompt, CHUNK);
            return Snapshot.of(engine, seq);
        } finally {
            engine.free(seq);
        }
    }

    @Test
    void aStopRequestedBeforeAChunkStopsItAtLayerZeroWithoutAllocating() {
        InferenceEngine engine = engine();
        int[] prompt = TestData.tokens(3 * CHUNK, 1, 259);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.prefill(seq, prompt, 0, CHUNK);
        Snapshot before = Snapshot.of(engine, seq);
        int pagesLive = engine.pagePool().pagesLive();
        EngineStats stats = engine.stats();

        seq.requestStop();
        ComputeStoppedException stopped = catchThrowableOfType(ComputeStoppedException.class,
                () -> engine.prefill(seq, prompt, CHUNK, 2 * CHUNK));

        assertThat(stopped.layer()).isZero();
        assertThat(stopped.layers()).isEqualTo(LAYERS);
        assertThat(stopped.tokens()).isEqualTo(CHUNK);
        assertThat(stopped.getStackTrace()).as("cheap: no stack trace").isEmpty();
        assertThat(engine.pagePool().pagesLive()).as("nothing allocated").isEqualTo(pagesLive);
        assertSameAs(Snapshot.of(engine, seq), before);
        assertThat(engine.stats().prefillChunks()).isEqualTo(stats.prefillChunks());
        assertThat(engine.stats().prefillStops()).isEqualTo(stats.prefillStops() + 1);
        engine.free(seq);
        assertThat(engine.pagePool().pagesLive()).isZero();
    }

    @Test
    void aStopRequestedInsideAChunkStopsItAtTheNextLayerBoundaryLeavingTheSequenceAsBefore() {
        InferenceEngine engine = engine();
        int[] prompt = TestData.tokens(3 * CHUNK, 2, 259);
        Snapshot reference = reference(engine, prompt);
        // Boundary b = "layers [0, b) done"; b = LAYERS is the one before the output head.
        for (int boundary = 1; boundary <= LAYERS; boundary++) {
            Sequence seq = engine.newSequence(SamplingParams.greedy());
            engine.prefill(seq, prompt, 0, CHUNK);
            Snapshot before = Snapshot.of(engine, seq);
            List<Integer> seen = new ArrayList<>();
            int stopAt = boundary;
            // The stop arrives just before the check at boundary b (as one arriving while layer b - 1 computed).
            engine.onLayerBoundary(layer -> {
                seen.add(layer);
                if (layer == stopAt) {
                    seq.requestStop();
                }
            });
            ComputeStoppedException stopped;
            try {
                stopped = catchThrowableOfType(ComputeStoppedException.class,
                        () -> engine.prefill(seq, prompt, CHUNK, 2 * CHUNK));
            } finally {
                engine.onLayerBoundary(null);
            }

            assertThat(stopped).as("stopped at boundary %d", boundary).isNotNull();
            assertThat(stopped.layer()).isEqualTo(boundary);
            assertThat(seen).as("no layer started after the stop was seen").hasSize(boundary + 1)
                    .last().isEqualTo(boundary);
            assertThat(seq.length()).as("the stopped chunk's positions are not counted").isEqualTo(CHUNK);
            assertThat(seq.pageCount()).as("pages allocated for the chunk stay until free")
                    .isEqualTo(engine.kvLayout().pagesFor(2 * CHUNK));
            Snapshot after = Snapshot.of(engine, seq);
            assertThat(after.kv()).as("the KV of the computed positions is untouched").containsExactly(before.kv());
            assertThat(after.logits()).as("the previous chunk's logits are kept").containsExactly(before.logits());
            assertThat(seq.pendingToken()).isEqualTo(before.pending());

            // A copy (fresh flag) goes on from the state the stop left, to the never-stopped result, bit for bit.
            Sequence copy = engine.fork(seq, SamplingParams.greedy());
            engine.free(seq);
            TestData.prefill(engine, copy, prompt, CHUNK);
            assertSameAs(Snapshot.of(engine, copy), reference);
            engine.free(copy);
            assertThat(engine.pagePool().pagesLive()).as("free gives every page back").isZero();
        }
    }

    @Test
    void aStopRequestedWhileALayerComputesAbandonsThatLayerBeforeItsNextWorkItemLeavingTheSequenceAsBefore() {
        InferenceEngine engine = engine();
        int[] prompt = TestData.tokens(3 * CHUNK, 5, 259);
        Snapshot reference = reference(engine, prompt);
        for (int stopIn = 0; stopIn < LAYERS; stopIn++) {
            Sequence seq = engine.newSequence(SamplingParams.greedy());
            engine.prefill(seq, prompt, 0, CHUNK);
            Snapshot before = Snapshot.of(engine, seq);
            List<Integer> boundaries = new ArrayList<>();
            List<Integer> itemsAfterTheStop = new ArrayList<>();
            int layer = stopIn;
            // The stop arrives inside layer `layer`, at its first work item (as one arriving while it computes).
            engine.onLayerBoundary(new InferenceEngine.LayerBoundaryListener() {
                @Override
                public void beforeLayer(int l) {
                    boundaries.add(l);
                }

                @Override
                public void insideLayer(int l) {
                    if (seq.stopRequested()) {
                        itemsAfterTheStop.add(l);
                    } else if (l == layer) {
                        seq.requestStop();
                    }
                }
            });
            ComputeStoppedException stopped;
            try {
                stopped = catchThrowableOfType(ComputeStoppedException.class,
                        () -> engine.prefill(seq, prompt, CHUNK, 2 * CHUNK));
            } finally {
                engine.onLayerBoundary(null);
            }

            assertThat(stopped).as("stopped inside layer %d", layer).isNotNull();
            assertThat(stopped.inside()).isTrue();
            assertThat(stopped.layer()).isEqualTo(layer);
            assertThat(stopped.tokens()).isEqualTo(CHUNK);
            assertThat(boundaries).as("no later boundary reached: the layer was abandoned part way")
                    .last().isEqualTo(layer);
            assertThat(itemsAfterTheStop).as("no work item asked again after the stop (one thread)").isEmpty();
            assertThat(seq.length()).as("the stopped chunk's positions are not counted").isEqualTo(CHUNK);
            Snapshot after = Snapshot.of(engine, seq);
            assertThat(after.kv()).as("the KV of the computed positions is untouched").containsExactly(before.kv());
            assertThat(after.logits()).as("the previous chunk's logits are kept").containsExactly(before.logits());
            assertThat(seq.pendingToken()).isEqualTo(before.pending());

            // A copy goes on from the state the stop left (a partly written layer beyond its length), to the
            // never-stopped result, bit for bit.
            Sequence copy = engine.fork(seq, SamplingParams.greedy());
            engine.free(seq);
            TestData.prefill(engine, copy, prompt, CHUNK);
            assertSameAs(Snapshot.of(engine, copy), reference);
            engine.free(copy);
            assertThat(engine.pagePool().pagesLive()).as("free gives every page back").isZero();
        }
    }

    @Test
    void aStopRequestedWhileTheOutputHeadComputesAbandonsItBeforeItsNextWorkItemLeavingTheSequenceAsBefore() {
        InferenceEngine engine = engine();
        int[] prompt = TestData.tokens(3 * CHUNK, 6, 259);
        Snapshot reference = reference(engine, prompt);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        engine.prefill(seq, prompt, 0, CHUNK);
        Snapshot before = Snapshot.of(engine, seq);
        List<Integer> itemsAfterTheStop = new ArrayList<>();
        List<Integer> headItems = new ArrayList<>();
        engine.onLayerBoundary(new InferenceEngine.LayerBoundaryListener() {
            @Override
            public void beforeLayer(int l) {
            }

            @Override
            public void insideLayer(int l) {
                if (seq.stopRequested()) {
                    itemsAfterTheStop.add(l);
                } else if (l == LAYERS) {
                    headItems.add(l);
                    seq.requestStop(); // arrives as the output head's first item starts
                }
            }
        });
        ComputeStoppedException stopped;
        try {
            stopped = catchThrowableOfType(ComputeStoppedException.class,
                    () -> engine.prefill(seq, prompt, CHUNK, 2 * CHUNK));
        } finally {
            engine.onLayerBoundary(null);
        }

        assertThat(headItems).as("the output head asks the safe point").hasSize(1);
        assertThat(stopped).as("stopped inside the output head").isNotNull();
        assertThat(stopped.inside()).isTrue();
        assertThat(stopped.layer()).isEqualTo(LAYERS);
        assertThat(itemsAfterTheStop).as("no work item asked again after the stop (one thread)").isEmpty();
        assertThat(seq.length()).isEqualTo(CHUNK);
        Snapshot after = Snapshot.of(engine, seq);
        assertThat(after.logits()).as("the previous chunk's logits are kept").containsExactly(before.logits());
        Sequence copy = engine.fork(seq, SamplingParams.greedy());
        engine.free(seq);
        TestData.prefill(engine, copy, prompt, CHUNK);
        assertSameAs(Snapshot.of(engine, copy), reference);
        engine.free(copy);
        assertThat(engine.pagePool().pagesLive()).isZero();
    }

    @Test
    void aDecodeStepWhoseEverySequenceIsStoppedWhileALayerOrTheHeadComputesAbandonsItBeforeItsNextWorkItem() {
        InferenceEngine engine = engine();
        int[] prompt = TestData.tokens(CHUNK, 7, 259);
        for (int stopIn = 0; stopIn <= LAYERS; stopIn++) {
            List<Sequence> batch = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                Sequence s = engine.newSequence(SamplingParams.greedy());
                engine.prefill(s, prompt, 0, CHUNK - i);
                engine.sample(s);
                batch.add(s);
            }
            List<Sequence> copies = batch.stream().map(s -> engine.fork(s, SamplingParams.greedy())).toList();
            int[] expected = engine.decodeStep(copies);
            int[] lengths = batch.stream().mapToInt(Sequence::length).toArray();
            int[] pending = batch.stream().mapToInt(Sequence::pendingToken).toArray();
            List<Integer> itemsAfterTheStop = new ArrayList<>();
            int layer = stopIn;
            // Both stops arrive inside layer `layer` (the output head for `LAYERS`), at its first checked item.
            engine.onLayerBoundary(new InferenceEngine.LayerBoundaryListener() {
                @Override
                public void beforeLayer(int l) {
                }

                @Override
                public void insideLayer(int l) {
                    if (batch.get(0).stopRequested()) {
                        itemsAfterTheStop.add(l);
                    } else if (l == layer) {
                        batch.forEach(Sequence::requestStop);
                    }
                }
            });
            ComputeStoppedException stopped;
            try {
                stopped = catchThrowableOfType(ComputeStoppedException.class, () -> engine.decodeStep(batch));
            } finally {
                engine.onLayerBoundary(null);
            }
            assertThat(stopped).as("stopped inside layer %d", layer).isNotNull();
            assertThat(stopped.inside()).isTrue();
            assertThat(stopped.layer()).isEqualTo(layer);
            assertThat(itemsAfterTheStop).as("no work item asked again after the stop (one thread)").isEmpty();
            assertThat(batch).extracting(Sequence::length).containsExactly(lengths[0], lengths[1]);
            assertThat(batch).extracting(Sequence::pendingToken).containsExactly(pending[0], pending[1]);
            // Copies of the stopped sequences take the step they did not take, to the reference's tokens.
            List<Sequence> resumed = batch.stream().map(s -> engine.fork(s, SamplingParams.greedy())).toList();
            assertThat(engine.decodeStep(resumed)).containsExactly(expected);
            batch.forEach(engine::free);
            resumed.forEach(engine::free);
            copies.forEach(engine::free);
            assertThat(engine.pagePool().pagesLive()).isZero();
        }
    }

    @Test
    void aStoppedSequenceLeavesOtherSequencesUntouched() {
        InferenceEngine engine = engine();
        int[] prompt = TestData.tokens(3 * CHUNK, 3, 259);
        Snapshot reference = reference(engine, prompt);
        Sequence other = engine.newSequence(SamplingParams.greedy());
        engine.prefill(other, prompt, 0, CHUNK);
        Sequence stopped = engine.newSequence(SamplingParams.greedy());
        engine.onLayerBoundary(layer -> {
            if (layer == 2) {
                stopped.requestStop();
            }
        });
        try {
            assertThatThrownBy(() -> engine.prefill(stopped, prompt, 0, CHUNK))
                    .isInstanceOfSatisfying(ComputeStoppedException.class, e -> assertThat(e.layer()).isEqualTo(2));
            // The other sequence's chunks, before and after the stop, are those of a run without it.
            TestData.prefill(engine, other, prompt, CHUNK);
        } finally {
            engine.onLayerBoundary(null);
        }
        assertThat(other.stopRequested()).isFalse();
        assertSameAs(Snapshot.of(engine, other), reference);
        assertThat(stopped.length()).isZero();
        engine.free(stopped);
        engine.free(other);
    }

    @Test
    void aDecodeStepStopsAtTheNextLayerBoundaryOnlyWhenEverySequenceOfItsBatchIsStopped() {
        InferenceEngine engine = engine();
        int[] prompt = TestData.tokens(CHUNK, 4, 259);
        List<Sequence> batch = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Sequence s = engine.newSequence(SamplingParams.greedy());
            engine.prefill(s, prompt, 0, CHUNK - i);
            engine.sample(s);
            batch.add(s);
        }
        // Reference: the same batch stepped twice by copies nobody stops.
        List<Sequence> copies = batch.stream().map(s -> engine.fork(s, SamplingParams.greedy())).toList();
        int[] first = engine.decodeStep(copies);
        int[] second = engine.decodeStep(copies);

        // Only two of three stopped: the step completes for all, with the same tokens.
        batch.get(0).requestStop();
        batch.get(2).requestStop();
        assertThat(engine.decodeStep(batch)).containsExactly(first);

        // All three: the step stops at the boundary after the layer during which the last stop arrived.
        int[] lengths = batch.stream().mapToInt(Sequence::length).toArray();
        int[] pending = batch.stream().mapToInt(Sequence::pendingToken).toArray();
        engine.onLayerBoundary(layer -> {
            if (layer == 2) {
                batch.get(1).requestStop();
            }
        });
        ComputeStoppedException stopped;
        try {
            stopped = catchThrowableOfType(ComputeStoppedException.class, () -> engine.decodeStep(batch));
        } finally {
            engine.onLayerBoundary(null);
        }
        assertThat(stopped.layer()).isEqualTo(2);
        assertThat(stopped.tokens()).isEqualTo(3);
        assertThat(batch).extracting(Sequence::length).containsExactly(lengths[0], lengths[1], lengths[2]);
        assertThat(batch).extracting(Sequence::pendingToken).containsExactly(pending[0], pending[1], pending[2]);
        assertThat(engine.stats().decodeStops()).isEqualTo(1);

        // Copies of the stopped sequences take the step they did not take, to the reference's tokens.
        List<Sequence> resumed = batch.stream().map(s -> engine.fork(s, SamplingParams.greedy())).toList();
        assertThat(engine.decodeStep(resumed)).containsExactly(second);
        for (Sequence s : batch) {
            engine.free(s);
        }
        resumed.forEach(engine::free);
        copies.forEach(engine::free);
        assertThat(engine.pagePool().pagesLive()).isZero();
    }

    @Test
    void withSafePointsOffAStopIsIgnoredByTheForward() {
        InferenceEngine engine = engines.create(FOUR_LAYERS, 7,
                Engines.options().withThreads(1).withPageTokens(16).withSafePoints(false));
        int[] prompt = TestData.tokens(2 * CHUNK, 5, 259);
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        seq.requestStop();
        TestData.prefill(engine, seq, prompt, CHUNK);
        assertThat(seq.length()).isEqualTo(2 * CHUNK);
        assertThat(engine.stats().prefillStops()).isZero();
        engine.free(seq);
    }

    /**
     * Hammer: a second thread requests the stop at a random moment of a chunk, hundreds of times. Whatever the
     * interleaving, the chunk either completed (length {@code to}) or stopped at a boundary in {@code [0, layers]}
     * with the length unchanged; a copy always reaches the reference result, and free always gives every page back.
     */
    @Test
    void aStopFromAnotherThreadAtAnyMomentLeavesEitherTheWholeChunkOrNone() throws Exception {
        InferenceEngine engine = engines.create(FOUR_LAYERS, 7, Engines.options().withPageTokens(16));
        int[] prompt = TestData.tokens(2 * CHUNK, 6, 259);
        Snapshot reference = reference(engine, prompt);
        SplittableRandom random = new SplittableRandom(11);
        int[] stoppedAt = new int[LAYERS + 2];
        for (int i = 0; i < ITERATIONS; i++) {
            Sequence seq = engine.newSequence(SamplingParams.greedy());
            engine.prefill(seq, prompt, 0, CHUNK);
            long delayNanos = random.nextLong(100_000);
            CountDownLatch go = new CountDownLatch(1);
            Thread stopper = Thread.ofPlatform().start(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                LockSupport.parkNanos(delayNanos);
                seq.requestStop();
            });
            go.countDown();
            int outcome;
            try {
                engine.prefill(seq, prompt, CHUNK, 2 * CHUNK);
                assertThat(seq.length()).isEqualTo(2 * CHUNK);
                outcome = LAYERS + 1;
            } catch (ComputeStoppedException e) {
                assertThat(e.layer()).isBetween(0, LAYERS);
                assertThat(seq.length()).isEqualTo(CHUNK);
                outcome = e.layer();
            }
            stopper.join();
            stoppedAt[outcome]++;
            Sequence copy = engine.fork(seq, SamplingParams.greedy());
            engine.free(seq);
            TestData.prefill(engine, copy, prompt, CHUNK);
            // The last logits read every layer's KV of every position: equal logits, equal cache.
            assertThat(engine.logits(copy)).containsExactly(reference.logits());
            engine.free(copy);
            assertThat(engine.pagePool().pagesLive()).isZero();
        }
        assertThat(stoppedAt[0] + stoppedAt[1] + stoppedAt[2] + stoppedAt[3] + stoppedAt[4] + stoppedAt[5])
                .as("outcomes by boundary (last: completed) %s", java.util.Arrays.toString(stoppedAt)).isEqualTo(ITERATIONS);
    }

    private static void assertSameAs(Snapshot actual, Snapshot expected) {
        assertThat(actual.length()).isEqualTo(expected.length());
        assertThat(actual.pages()).isEqualTo(expected.pages());
        assertThat(actual.kv()).containsExactly(expected.kv());
        assertThat(actual.logits()).containsExactly(expected.logits());
    }
}
