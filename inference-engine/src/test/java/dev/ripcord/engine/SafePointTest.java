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
    void aDecodeStepStopsAtTheNextLayerBoundaryWhenEverySequenceOfItsBatchIsStopped() {
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

        // Only two of three stopped before the step: it goes on for the third, with its token, and leaves the two
        // out (they stay as they were).
        batch.get(0).requestStop();
        batch.get(2).requestStop();
        assertThat(engine.decodeStep(batch))
                .containsExactly(InferenceEngine.STOPPED, first[1], InferenceEngine.STOPPED);

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

        // Copies of the stopped sequences take the steps they did not take, to the reference's tokens: the first
        // and the last never took the first step.
        List<Sequence> resumed = batch.stream().map(s -> engine.fork(s, SamplingParams.greedy())).toList();
        assertThat(engine.decodeStep(resumed)).containsExactly(first[0], second[1], first[2]);
        for (Sequence s : batch) {
            engine.free(s);
        }
        resumed.forEach(engine::free);
        copies.forEach(engine::free);
        assertThat(engine.pagePool().pagesLive()).isZero();
    }

    /**
     * A batch of three decoding; the middle sequence's stop arrives inside the step, at the start of its first
     * attention item of layer {@code k} (or of its first output-head item, or of its last, when only its sampling
     * is left). Regression: a step went on for every sequence until its end when only some were stopped, so a
     * sequence that was gone still read its whole context in every remaining layer, got its logits and a sample.
     */
    @Test
    void aSequenceStoppedInsideADecodeStepGetsNoMoreOfItsOwnWorkAndTheOthersKeepTheirBits() {
        InferenceEngine engine = engine();
        int[] prompt = TestData.tokens(CHUNK, 8, 259);
        // Where the stop arrives: inside layer k for k < LAYERS; LAYERS: the head's first item of the row;
        // LAYERS + 1: the head's last item of the row (only the sampling is left to skip).
        for (int where = 0; where <= LAYERS + 1; where++) {
            List<Sequence> batch = decodingBatch(engine, prompt, 3);
            List<Sequence> copies = batch.stream().map(s -> engine.fork(s, SamplingParams.greedy())).toList();
            int[] headItemsOfRow = new int[1];
            engine.onLayerBoundary(rowItems((l, row) -> {
                if (l == LAYERS && row == 1) {
                    headItemsOfRow[0]++;
                }
            }));
            int[] expected;
            try {
                expected = engine.decodeStep(copies);
            } finally {
                engine.onLayerBoundary(null);
            }
            assertThat(headItemsOfRow[0]).as("the row is computed in several head items").isGreaterThan(1);
            List<float[]> expectedLogits = copies.stream().map(engine::logits).toList();
            int[] expectedNext = engine.decodeStep(List.of(copies.get(0), copies.get(2)));

            Sequence stopped = batch.get(1);
            Snapshot before = Snapshot.of(engine, stopped);
            int sampledBefore = stopped.sampledTokens();
            int stopLayer = Math.min(where, LAYERS);
            int stopAtItem = where == LAYERS + 1 ? headItemsOfRow[0] : 1;
            int[] itemsOfRow = new int[1];
            int[] itemsAfterTheStop = new int[1];
            engine.onLayerBoundary(rowItems((l, row) -> {
                if (row != 1) {
                    return;
                }
                if (stopped.stopRequested()) {
                    itemsAfterTheStop[0]++;
                } else if (l == stopLayer && ++itemsOfRow[0] == stopAtItem) {
                    stopped.requestStop(); // arrives as this item starts: the item runs, no later one
                }
            }));
            int[] tokens;
            try {
                tokens = engine.decodeStep(batch);
            } finally {
                engine.onLayerBoundary(null);
            }

            assertThat(stopped.stopRequested()).as("the stop arrived (where %d)", where).isTrue();
            assertThat(itemsAfterTheStop[0]).as("attention and head items of the stopped row after the stop, "
                    + "one thread (where %d)", where).isZero();
            assertThat(tokens).as("the others' tokens; nothing for the stopped one")
                    .containsExactly(expected[0], InferenceEngine.STOPPED, expected[2]);
            assertThat(engine.logits(batch.get(0))).containsExactly(expectedLogits.get(0));
            assertThat(engine.logits(batch.get(2))).containsExactly(expectedLogits.get(2));
            assertThat(stopped.stoppedAtLayer()).isEqualTo(stopLayer);
            Snapshot after = Snapshot.of(engine, stopped);
            assertThat(after.length()).as("the stopped sequence did not advance").isEqualTo(before.length());
            assertThat(after.pending()).isEqualTo(before.pending());
            assertThat(after.logits()).as("its previous logits are kept").containsExactly(before.logits());
            assertThat(stopped.sampledTokens()).as("no random draw taken").isEqualTo(sampledBefore);
            assertThat(engine.stats().decodeStops()).as("the step itself completed").isZero();

            // The others go on to the reference's next tokens; a copy of the stopped one takes the step it did not
            // take, over the keys and values written for its position after the stop, to the reference's token.
            assertThat(engine.decodeStep(List.of(batch.get(0), batch.get(2)))).containsExactly(expectedNext);
            Sequence resumed = engine.fork(stopped, SamplingParams.greedy());
            assertThat(engine.decodeStep(List.of(resumed))).containsExactly(expected[1]);
            assertThat(engine.logits(resumed)).containsExactly(expectedLogits.get(1));
            batch.forEach(engine::free);
            copies.forEach(engine::free);
            engine.free(resumed);
            assertThat(engine.pagePool().pagesLive()).isZero();
        }
    }

    /**
     * Hammer, on two threads (CI's cores): the middle sequence's stop arrives at a random item of its own in a
     * random layer or the head. The other worker may have taken one item of the row before it could see the stop
     * (at most {@code threads - 1} items after it), never more, and the others' tokens and logits keep their bits.
     */
    @Test
    void onSeveralThreadsAStoppedSequenceGetsAtMostTheItemsOtherWorkersHadTaken() {
        int threads = 2;
        InferenceEngine engine = engines.create(FOUR_LAYERS, 7,
                Engines.options().withThreads(threads).withPageTokens(16));
        int[] prompt = TestData.tokens(CHUNK, 9, 259);
        SplittableRandom random = new SplittableRandom(12);
        List<Sequence> base = decodingBatch(engine, prompt, 3);
        int maxAfter = 0;
        for (int i = 0; i < ITERATIONS / 3; i++) {
            List<Sequence> batch = base.stream().map(s -> engine.fork(s, SamplingParams.greedy())).toList();
            List<Sequence> copies = base.stream().map(s -> engine.fork(s, SamplingParams.greedy())).toList();
            int[] expected = engine.decodeStep(copies);
            Sequence stopped = batch.get(1);
            int stopLayer = random.nextInt(LAYERS + 1);
            int stopAtItem = 1 + random.nextInt(2);
            java.util.concurrent.atomic.AtomicInteger itemsOfRow = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicInteger after = new java.util.concurrent.atomic.AtomicInteger();
            java.util.concurrent.atomic.AtomicBoolean raised = new java.util.concurrent.atomic.AtomicBoolean();
            engine.onLayerBoundary(rowItems((l, row) -> {
                if (row != 1) {
                    return;
                }
                if (raised.get()) {
                    after.incrementAndGet();
                } else if (l == stopLayer && itemsOfRow.incrementAndGet() == stopAtItem) {
                    stopped.requestStop();
                    raised.set(true);
                }
            }));
            int[] tokens;
            try {
                tokens = engine.decodeStep(batch);
            } finally {
                engine.onLayerBoundary(null);
            }
            assertThat(raised).as("the stop arrived (layer %d, item %d)", stopLayer, stopAtItem).isTrue();
            assertThat(after.get()).as("items of the stopped row after the stop, %d threads", threads)
                    .isLessThanOrEqualTo(threads - 1);
            maxAfter = Math.max(maxAfter, after.get());
            assertThat(tokens).containsExactly(expected[0], InferenceEngine.STOPPED, expected[2]);
            assertThat(engine.logits(batch.get(0))).containsExactly(engine.logits(copies.get(0)));
            assertThat(engine.logits(batch.get(2))).containsExactly(engine.logits(copies.get(2)));
            batch.forEach(engine::free);
            copies.forEach(engine::free);
        }
        base.forEach(engine::free);
        assertThat(engine.pagePool().pagesLive()).isZero();
        assertThat(maxAfter).as("most items after a stop").isLessThanOrEqualTo(threads - 1);
    }

    /** {@code n} sequences of {@code prompt} shortened by 0, 1, ... tokens, each with its first token sampled. */
    private static List<Sequence> decodingBatch(InferenceEngine engine, int[] prompt, int n) {
        List<Sequence> batch = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Sequence s = engine.newSequence(SamplingParams.greedy());
            engine.prefill(s, prompt, 0, prompt.length - i);
            engine.sample(s);
            batch.add(s);
        }
        return batch;
    }

    /** A listener told only of the per-sequence items of decode steps. */
    private static InferenceEngine.LayerBoundaryListener rowItems(java.util.function.BiConsumer<Integer, Integer> f) {
        return new InferenceEngine.LayerBoundaryListener() {
            @Override
            public void beforeLayer(int layer) {
            }

            @Override
            public void rowItem(int layer, int row) {
                f.accept(layer, row);
            }
        };
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
