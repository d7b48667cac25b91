package dev.ripcord.engine;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Creates engines for a test class and counts their leaks: after every test each engine must have zero live KV
 * pages and zero live sequences (the test fails otherwise), and after the class every engine is closed.
 *
 * <pre>{@code @RegisterExtension static final Engines engines = new Engines();}</pre>
 */
public final class Engines implements AfterEachCallback, AfterAllCallback {
    private final List<InferenceEngine> created = new ArrayList<>();

    /** Two threads unless a test asks otherwise: the CI machine has two cores. */
    public static EngineOptions options() {
        return EngineOptions.defaults().withThreads(2).withKvPages(64);
    }

    public InferenceEngine tiny(long seed) {
        return track(InferenceEngine.create(Preset.TINY, seed, options()));
    }

    public InferenceEngine create(Preset preset, long seed, EngineOptions options) {
        return track(InferenceEngine.create(preset, seed, options));
    }

    public InferenceEngine create(ModelConfig config, long seed, EngineOptions options) {
        return track(InferenceEngine.create(config, seed, options));
    }

    public InferenceEngine load(Path checkpoint, Path tokenizer, EngineOptions options) {
        try {
            return track(InferenceEngine.load(checkpoint, tokenizer, options));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public synchronized InferenceEngine track(InferenceEngine engine) {
        created.add(engine);
        return engine;
    }

    @Override
    public synchronized void afterEach(ExtensionContext context) {
        List<String> leaks = new ArrayList<>();
        for (InferenceEngine e : created) {
            if (!e.isClosed() && (e.pagePool().pagesLive() != 0 || e.sequencesLive() != 0)) {
                leaks.add("%d pages (%d bytes) and %d sequences live in %s".formatted(e.pagePool().pagesLive(),
                        e.pagePool().bytesLive(), e.sequencesLive(), e.describe()));
            }
        }
        if (!leaks.isEmpty()) {
            throw new AssertionError(context.getDisplayName() + " leaked KV pages: " + leaks);
        }
    }

    @Override
    public synchronized void afterAll(ExtensionContext context) {
        for (InferenceEngine e : created) {
            e.close();
        }
        created.clear();
    }
}
