package dev.ripcord.tokenizer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A GGUF vocabulary: token texts, their types and the special tokens, plus the split of a prompt into plain-text
 * fragments and special tokens (llama.cpp's {@code tokenizer_st_partition}). Immutable.
 *
 * <p>Token types ({@code tokenizer.ggml.token_type}): 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused,
 * 6 byte. User-defined tokens are always matched as whole tokens in text; control and unknown tokens only when the
 * caller asks to parse special tokens. Matching is leftmost, and at one position the longest token wins.
 */
final class Vocabulary {
    static final int NORMAL = 1;
    static final int UNKNOWN = 2;
    static final int CONTROL = 3;
    static final int USER_DEFINED = 4;
    static final int UNUSED = 5;
    static final int BYTE = 6;

    private final String[] texts;
    private final int[] types;
    private final Map<String, Integer> ids;
    private final SpecialTokens special;
    /** Matchable tokens by first char, longest text first. */
    private final Map<Character, int[]> matchable;

    Vocabulary(String[] texts, int[] types, SpecialTokens special) {
        Checks.requireArgument(texts.length == types.length, "%s tokens but %s token types", texts.length,
                types.length);
        this.texts = texts;
        this.types = types;
        this.special = special;
        this.ids = new HashMap<>(texts.length * 2);
        Map<Character, List<Integer>> byFirst = new HashMap<>();
        for (int i = 0; i < texts.length; i++) {
            ids.putIfAbsent(texts[i], i);
            int type = types[i];
            if ((type == CONTROL || type == USER_DEFINED || type == UNKNOWN) && !texts[i].isEmpty()) {
                byFirst.computeIfAbsent(texts[i].charAt(0), c -> new ArrayList<>()).add(i);
            }
        }
        this.matchable = new HashMap<>();
        byFirst.forEach((c, list) -> matchable.put(c, list.stream()
                .sorted((a, b) -> Integer.compare(texts[b].length(), texts[a].length()))
                .mapToInt(Integer::intValue).toArray()));
        for (int id : new int[] {special.bos(), special.eos(), special.eot(), special.eom(), special.unknown(),
                special.padding()}) {
            Checks.requireArgument(id < texts.length, "special token id %s outside the vocabulary of %s", id,
                    texts.length);
        }
    }

    int size() {
        return texts.length;
    }

    String text(int id) {
        return texts[id];
    }

    int type(int id) {
        return types[id];
    }

    SpecialTokens special() {
        return special;
    }

    /** The id of a token spelled exactly {@code text}, or -1. */
    int id(String text) {
        Integer id = ids.get(text);
        return id == null ? -1 : id;
    }

    /** A piece of a prompt: plain text to tokenize ({@code token < 0}), or one special token. */
    record Fragment(String text, int token) {
    }

    /** Splits {@code text} at special-token text; see the class comment for which tokens are matched. */
    List<Fragment> partition(String text, boolean parseSpecial) {
        List<Fragment> out = new ArrayList<>();
        int plainStart = 0;
        int i = 0;
        while (i < text.length()) {
            int[] candidates = matchable.get(text.charAt(i));
            int found = -1;
            if (candidates != null) {
                for (int id : candidates) {
                    if ((parseSpecial || types[id] == USER_DEFINED) && text.startsWith(texts[id], i)) {
                        found = id;
                        break;
                    }
                }
            }
            if (found < 0) {
                i++;
                continue;
            }
            if (i > plainStart) {
                out.add(new Fragment(text.substring(plainStart, i), -1));
            }
            out.add(new Fragment(texts[found], found));
            i += texts[found].length();
            plainStart = i;
        }
        if (plainStart < text.length()) {
            out.add(new Fragment(text.substring(plainStart), -1));
        }
        return out;
    }

    /**
     * Marks the places in client text where the special-token partition would differ from the plain one. U+FDD0 is
     * a Unicode noncharacter, reserved for a program's internal use and never part of a token's text: one is inserted
     * where needed (see {@link #asPlainText}), and one in the text is doubled so that {@link #unmark} restores it.
     */
    static final char MARK = '\uFDD0';

    /**
     * {@code text} marked so that the special-token partition of any prompt containing it splits the text exactly
     * where the plain partition would: walking the text as the plain partition does, wherever the special-token
     * partition would match a longer token (a control token, where plain text matches a user-defined token or
     * nothing), a mark after the plain choice breaks that longer match. Templates may trim or concatenate the result;
     * marks are not whitespace.
     */
    String asPlainText(String text) {
        StringBuilder out = null;
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            int plain = c == MARK ? 0 : matchLength(text, i, false);
            int special = c == MARK ? 0 : matchLength(text, i, true);
            int step = Math.max(plain, 1);
            boolean mark = special > plain;
            if ((mark || c == MARK) && out == null) {
                out = new StringBuilder(text.length() + 16).append(text, 0, i);
            }
            if (out != null) {
                out.append(text, i, i + step);
                if (mark || c == MARK) {
                    out.append(MARK);
                }
            }
            i += step;
        }
        return out == null ? text : out.toString();
    }

    /** Undoes {@link #asPlainText}'s marks in a plain fragment: a pair is one literal U+FDD0, a lone mark nothing. */
    static String unmark(String fragment) {
        int first = fragment.indexOf(MARK);
        if (first < 0) {
            return fragment;
        }
        StringBuilder out = new StringBuilder(fragment.length()).append(fragment, 0, first);
        for (int i = first; i < fragment.length(); i++) {
            char c = fragment.charAt(i);
            if (c != MARK) {
                out.append(c);
            } else if (i + 1 < fragment.length() && fragment.charAt(i + 1) == MARK) {
                out.append(MARK);
                i++;
            }
        }
        return out.toString();
    }

    /** The length of the token {@link #partition} would match at {@code i}, or 0. */
    private int matchLength(String text, int i, boolean parseSpecial) {
        int[] candidates = matchable.get(text.charAt(i));
        if (candidates != null) {
            for (int id : candidates) {
                if ((parseSpecial || types[id] == USER_DEFINED) && text.startsWith(texts[id], i)) {
                    return texts[id].length();
                }
            }
        }
        return 0;
    }

    /** Whether a token decodes to nothing when streaming text (control, unknown, unused). */
    boolean silent(int id) {
        int type = types[id];
        return type == CONTROL || type == UNKNOWN || type == UNUSED;
    }

    /** The byte of a byte token spelled {@code <0xHH>}, or -1. */
    static int byteValue(String text) {
        if (text.length() == 6 && text.startsWith("<0x") && text.charAt(5) == '>') {
            int hi = Character.digit(text.charAt(3), 16);
            int lo = Character.digit(text.charAt(4), 16);
            if (hi >= 0 && lo >= 0) {
                return hi << 4 | lo;
            }
        }
        return -1;
    }
}
