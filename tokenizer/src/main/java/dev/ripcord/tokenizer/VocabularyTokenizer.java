package dev.ripcord.tokenizer;

/**
 * What the two GGUF tokenizers share: a {@link Vocabulary} with its special tokens, and the encoding frame around
 * the model-specific part. A text is partitioned into special-token fragments (kept as their ids, when the caller
 * asks for special-token parsing) and plain fragments, which the subclass encodes; BOS and EOS are added around the
 * result as the metadata's {@code add_bos_token}/{@code add_eos_token} say.
 */
abstract sealed class VocabularyTokenizer implements Tokenizer
        permits ByteLevelBpeTokenizer, SentencePieceTokenizer {

    protected final Vocabulary vocabulary;

    VocabularyTokenizer(Vocabulary vocabulary) {
        this.vocabulary = vocabulary;
    }

    @Override
    public final int vocabSize() {
        return vocabulary.size();
    }

    @Override
    public final int bos() {
        return vocabulary.special().bos();
    }

    @Override
    public final int eos() {
        return vocabulary.special().eos();
    }

    @Override
    public final int[] stopTokens() {
        return vocabulary.special().stopTokens();
    }

    /** The special tokens and flags from the metadata. */
    public final SpecialTokens specialTokens() {
        return vocabulary.special();
    }

    @Override
    public final String tokenText(int token) {
        return vocabulary.text(token);
    }

    @Override
    public final String asPlainText(String text) {
        return vocabulary.asPlainText(text);
    }

    @Override
    public final int[] encode(String text, boolean addBos) {
        return encode(text, addBos, false, false);
    }

    @Override
    public final int[] encode(String text, boolean addSpecial, boolean parseSpecial) {
        SpecialTokens special = vocabulary.special();
        return encode(text, addSpecial && special.addBos(), addSpecial && special.addEos(), parseSpecial);
    }

    private int[] encode(String text, boolean bos, boolean eos, boolean parseSpecial) {
        IdList out = new IdList();
        if (bos && bos() >= 0) {
            out.add(bos());
        }
        boolean afterSpecial = true; // the first fragment counts as following one
        for (Vocabulary.Fragment fragment : vocabulary.partition(text, parseSpecial)) {
            if (fragment.token() >= 0) {
                out.add(fragment.token());
                afterSpecial = true;
                continue;
            }
            encodeFragment(parseSpecial ? Vocabulary.unmark(fragment.text()) : fragment.text(), afterSpecial, out);
            afterSpecial = false;
        }
        if (eos && eos() >= 0) {
            out.add(eos());
        }
        return out.toArray();
    }

    /**
     * Encodes one plain-text fragment into {@code out}.
     *
     * @param afterSpecial whether the fragment starts the text or follows a special token
     */
    abstract void encodeFragment(String text, boolean afterSpecial, IdList out);
}
