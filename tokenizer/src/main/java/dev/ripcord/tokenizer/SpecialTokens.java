package dev.ripcord.tokenizer;

import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

/**
 * A vocabulary's special tokens as GGUF metadata names them ({@code tokenizer.ggml.*_token_id}); {@code -1} where
 * the model has none.
 *
 * @param bos       beginning of sequence
 * @param eos       end of sequence
 * @param eot       end of turn (chat models, e.g. Llama 3's {@code <|eot_id|>})
 * @param eom       end of message (Llama 3.1's {@code <|eom_id|>}, after a tool call)
 * @param unknown   what text with no token becomes (SentencePiece vocabularies without byte fallback)
 * @param padding   padding
 * @param addBos    whether prompts start with BOS ({@code tokenizer.ggml.add_bos_token})
 * @param addEos    whether prompts end with EOS ({@code tokenizer.ggml.add_eos_token})
 * @param stopTokens the end-of-generation set: eos, eot, eom and the control tokens whose text is a well-known end
 *                  of turn ({@link #END_OF_TURN_TEXTS}), as llama.cpp builds it; sorted, no duplicates
 */
public record SpecialTokens(int bos, int eos, int eot, int eom, int unknown, int padding, boolean addBos,
        boolean addEos, int[] stopTokens) {

    /**
     * Control-token texts that end a turn in the common chat formats; llama.cpp adds tokens spelled like these to its
     * end-of-generation set even when the metadata names another EOS (Qwen2 names {@code <|endoftext|>}, its chat
     * turns end with {@code <|im_end|>}).
     */
    public static final List<String> END_OF_TURN_TEXTS = List.of("<|eot_id|>", "<|eom_id|>",
            "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>");

    public SpecialTokens {
        stopTokens = IntStream.of(stopTokens).filter(t -> t >= 0).sorted().distinct().toArray();
    }

    @Override
    public int[] stopTokens() {
        return stopTokens.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SpecialTokens s && bos == s.bos && eos == s.eos && eot == s.eot && eom == s.eom
                && unknown == s.unknown && padding == s.padding && addBos == s.addBos && addEos == s.addEos
                && Arrays.equals(stopTokens, s.stopTokens);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(new int[] {bos, eos, eot, eom, unknown, padding}) * 31 + Arrays.hashCode(stopTokens);
    }

    @Override
    public String toString() {
        return "SpecialTokens[bos=%d, eos=%d, eot=%d, eom=%d, unknown=%d, padding=%d, addBos=%s, addEos=%s, stop=%s]"
                .formatted(bos, eos, eot, eom, unknown, padding, addBos, addEos, Arrays.toString(stopTokens));
    }
}
