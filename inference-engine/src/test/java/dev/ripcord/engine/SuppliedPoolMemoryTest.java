package dev.ripcord.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An engine whose KV page pool lives in memory supplied from outside ({@link KvPoolMemory}, what a worker does with
 * its transfer agent's shared-memory region): the pages are that memory, the engine computes the same tokens as
 * with its own pool, and closing the engine leaves the memory to its owner.
 */
class SuppliedPoolMemoryTest {
    @RegisterExtension
    static final Engines engines = new Engines();

    /** Hands out one segment of a shared arena the test owns, and remembers what it was asked. */
    static final class Supplier implements KvPoolMemory {
        final Arena arena = Arena.ofShared();
        final List<Long> requests = new ArrayList<>();
        MemorySegment handedOut;

        @Override
        public MemorySegment allocate(long bytes) {
            requests.add(bytes);
            handedOut = arena.allocate(bytes + 4096, 4096);
            return handedOut;
        }
    }

    @Test
    void thePoolIsTheSuppliedMemoryAskedForOnceWithThePoolsSize() {
        Supplier memory = new Supplier();
        try (memory.arena) {
            InferenceEngine engine = engines.create(Preset.TINY, 7, Engines.options().withKvPoolMemory(memory));
            KvPagePool pool = engine.pagePool();
            assertThat(memory.requests).containsExactly((long) pool.pageCount() * pool.pageBytes());
            assertThat(pool.segment().address()).isEqualTo(memory.handedOut.address());
            assertThat(pool.segment().byteSize()).isEqualTo((long) pool.pageCount() * pool.pageBytes());
            assertThat(engine.options().kvPoolMemory()).isSameAs(memory);
            engine.close();
        }
    }

    @Test
    void closingTheEngineLeavesSuppliedMemoryToItsOwner() {
        Supplier memory = new Supplier();
        try (memory.arena) {
            InferenceEngine engine = engines.create(Preset.TINY, 7, Engines.options().withKvPoolMemory(memory));
            Sequence seq = engine.newSequence(SamplingParams.greedy());
            TestData.prefill(engine, seq, TestData.tokens(40, 8, 259), 16);
            long page0 = engine.pagePool().offsetOf(seq.poolPage(0));
            float written = memory.handedOut.get(java.lang.foreign.ValueLayout.JAVA_FLOAT, page0 + 4);
            engine.free(seq);
            engine.close();
            // Still mapped and still holding the KV bytes the engine wrote: only the owner frees it.
            assertThat(memory.handedOut.scope().isAlive()).isTrue();
            assertThat(memory.handedOut.get(java.lang.foreign.ValueLayout.JAVA_FLOAT, page0 + 4)).isEqualTo(written);
        }
        assertThat(memory.handedOut.scope().isAlive()).isFalse();
    }

    @Test
    void anEngineOnSuppliedMemoryComputesTheSameTokensAsOneOnItsOwn() {
        Supplier memory = new Supplier();
        try (memory.arena) {
            InferenceEngine own = engines.create(Preset.TINY, 11, Engines.options());
            InferenceEngine supplied = engines.create(Preset.TINY, 11, Engines.options().withKvPoolMemory(memory));
            int[] prompt = TestData.tokens(90, 8, 259);
            List<Integer> a = greedy(own, prompt, 20);
            List<Integer> b = greedy(supplied, prompt, 20);
            assertThat(b).isEqualTo(a);
            supplied.close();
        }
    }

    @Test
    void suppliedMemoryTooSmallOrMisalignedIsRejected() {
        try (Arena arena = Arena.ofShared()) {
            assertThatThrownBy(() -> InferenceEngine.create(Preset.TINY, 7, Engines.options()
                    .withKvPoolMemory(bytes -> arena.allocate(bytes - 1, 4096))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("smaller than");
            assertThatThrownBy(() -> InferenceEngine.create(Preset.TINY, 7, Engines.options()
                    .withKvPoolMemory(bytes -> arena.allocate(bytes + 64, 4096).asSlice(8))))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("aligned");
        }
    }

    private static List<Integer> greedy(InferenceEngine engine, int[] prompt, int steps) {
        Sequence seq = engine.newSequence(SamplingParams.greedy());
        TestData.prefill(engine, seq, prompt, 32);
        List<Integer> tokens = new ArrayList<>();
        tokens.add(engine.sample(seq));
        for (int i = 0; i < steps; i++) {
            tokens.add(engine.decodeStep(List.of(seq))[0]);
        }
        engine.free(seq);
        return tokens;
    }
}
