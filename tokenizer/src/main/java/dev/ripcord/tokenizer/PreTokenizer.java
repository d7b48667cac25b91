package dev.ripcord.tokenizer;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How byte-level BPE vocabularies split text into words before merging ({@code tokenizer.ggml.pre}). Each is a
 * sequence of regexes applied in turn, every regex splitting each piece the previous one left into its matches and
 * the gaps between them (Hugging Face tokenizers' {@code Split} with behaviour {@code Isolated}; llama.cpp's
 * {@code unicode_regex_split}).
 *
 * <p>The regexes are the ones in the models' {@code tokenizer.json} files and in llama.cpp's {@code llama-vocab.cpp}
 * ({@code LLAMA_VOCAB_PRE_TYPE_*}), with one translation for Java: the case-insensitive group
 * {@code (?i:'s|'t|'re|'ve|'m|'ll|'d)} is spelled {@code (?:'[sS]|'[tT]|'[rR][eE]|...)} as llama.cpp spells it (so
 * only ASCII letters fold, not {@code ſ} or the Kelvin sign). All are compiled with
 * {@link Pattern#UNICODE_CHARACTER_CLASS}, because {@code \s} must be Unicode white space as in Oniguruma and
 * llama.cpp, not Java's ASCII default; {@code \p{L}} and {@code \p{N}} are Unicode categories either way.
 */
public enum PreTokenizer {
    /** Llama 3 / 3.1 / 3.2 ({@code llama-bpe}): numbers in groups of up to three. */
    LLAMA3("llama-bpe", false,
            "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
                    + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
    /** Qwen2 / Qwen2.5 ({@code qwen2}): single digits; the text is NFC-normalized first, as its tokenizer.json says. */
    QWEN2("qwen2", true,
            "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
                    + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"),
    /**
     * SmolLM / SmolLM2 ({@code smollm}): every digit on its own (HF {@code Digits(individual_digits=true)}), then
     * GPT-2's split (llama.cpp's {@code LLAMA_VOCAB_PRE_TYPE_SMOLLM}, shared with StarCoder).
     */
    SMOLLM("smollm", false, "\\p{N}",
            "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"),
    /** GPT-2's original byte-level split ({@code gpt2}, and {@code default}). */
    GPT2("gpt2", false, "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");

    private final String ggufName;
    private final boolean nfc;
    private final List<Pattern> patterns;

    PreTokenizer(String ggufName, boolean nfc, String... regexes) {
        this.ggufName = ggufName;
        this.nfc = nfc;
        List<Pattern> compiled = new ArrayList<>();
        for (String regex : regexes) {
            compiled.add(Pattern.compile(regex, Pattern.UNICODE_CHARACTER_CLASS));
        }
        this.patterns = List.copyOf(compiled);
    }

    /** The {@code tokenizer.ggml.pre} value that selects this. */
    public String ggufName() {
        return ggufName;
    }

    /** Whether the split also ignores merges for words that are whole tokens (Llama 3's {@code ignore_merges}). */
    boolean ignoreMerges() {
        return this == LLAMA3;
    }

    /**
     * The pre-tokenizer {@code tokenizer.ggml.pre} names; {@code null} (absent) and {@code default} mean GPT-2's.
     *
     * @throws IllegalArgumentException naming the value and the supported ones
     */
    public static PreTokenizer byGgufName(String name) {
        if (name == null || name.equals("default")) {
            return GPT2;
        }
        for (PreTokenizer p : values()) {
            if (p.ggufName.equals(name.toLowerCase(Locale.ROOT))) {
                return p;
            }
        }
        throw new IllegalArgumentException("unsupported tokenizer.ggml.pre '%s'; supported: llama-bpe, qwen2, "
                .formatted(name) + "smollm, gpt2, default");
    }

    /** The words of {@code text}, in order; their concatenation is the (normalized) text. */
    public List<String> split(String text) {
        String normalized = nfc ? Normalizer.normalize(text, Normalizer.Form.NFC) : text;
        List<String> pieces = List.of(normalized);
        for (Pattern pattern : patterns) {
            List<String> next = new ArrayList<>();
            for (String piece : pieces) {
                Matcher m = pattern.matcher(piece);
                int previous = 0;
                while (m.find()) {
                    if (m.start() > previous) {
                        next.add(piece.substring(previous, m.start()));
                    }
                    if (m.end() > m.start()) {
                        next.add(m.group());
                    }
                    previous = m.end();
                }
                if (previous < piece.length()) {
                    next.add(piece.substring(previous));
                }
            }
            pieces = next;
        }
        return pieces;
    }
}
