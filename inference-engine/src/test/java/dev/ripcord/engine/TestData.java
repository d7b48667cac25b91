package dev.ripcord.engine;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

/** Shared fixtures: reproducible prompts and a reader for the valid part of a sequence's KV pages. */
final class TestData {
    private TestData() {
    }

    static int[] tokens(int n, long seed, int vocab) {
        SplittableRandom random = new SplittableRandom(seed);
        int[] tokens = new int[n];
        for (int i = 0; i < n; i++) {
            tokens[i] = random.nextInt(vocab);
        }
        return tokens;
    }

    /**
     * Every key and value the sequence holds for positions {@code [0, length)}, read at the offsets
     * {@link KvLayout} documents: keys (layer, head, position, dim) then values in the same order.
     */
    static float[] kv(InferenceEngine engine, Sequence seq) {
        KvLayout layout = engine.kvLayout();
        int n = seq.length();
        float[] out = new float[2 * layout.layers() * layout.kvHeads() * n * layout.headSize()];
        int i = 0;
        for (int kind = 0; kind < 2; kind++) {
            for (int l = 0; l < layout.layers(); l++) {
                for (int g = 0; g < layout.kvHeads(); g++) {
                    for (int p = 0; p < n; p++) {
                        MemorySegment page = seq.pages().get(p / layout.pageTokens()).segment();
                        int slot = p % layout.pageTokens();
                        for (int d = 0; d < layout.headSize(); d++) {
                            long offset = kind == 0 ? layout.keyOffset(l, g, d, slot) : layout.valueOffset(l, g, slot, d);
                            out[i++] = page.get(ValueLayout.JAVA_FLOAT_UNALIGNED, offset);
                        }
                    }
                }
            }
        }
        return out;
    }

    /** Prefills {@code prompt} in chunks of {@code chunk} tokens. */
    static void prefill(InferenceEngine engine, Sequence seq, int[] prompt, int chunk) {
        for (int from = seq.length(); from < prompt.length; from += chunk) {
            engine.prefill(seq, prompt, from, Math.min(prompt.length, from + chunk));
        }
    }
}
