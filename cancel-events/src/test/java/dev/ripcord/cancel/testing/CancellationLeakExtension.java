package dev.ripcord.cancel.testing;

import java.util.Objects;
import java.util.function.Supplier;

import dev.ripcord.cancel.CancellationRegistry;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test (or a test class) that leaves requests registered in a {@link CancellationRegistry}: every
 * registration must be completed when its request ends, and a leaked one is a bug that in production holds memory and
 * keeps a request "live" forever.
 *
 * <pre>{@code
 * @RegisterExtension
 * final CancellationLeakExtension leaks = CancellationLeakExtension.afterEachTest(() -> registry);
 * }</pre>
 *
 * The registry is looked up through the supplier when the check runs, so it may come from a field set in
 * {@code @BeforeEach} or from a Spring context. A test fixture: it ships in cancel-events' test-jar
 * ({@code <type>test-jar</type>}, test scope), never in the main jar, so no production classpath carries JUnit.
 */
public final class CancellationLeakExtension implements AfterEachCallback, AfterAllCallback {

    private final Supplier<CancellationRegistry> registry;
    private final boolean afterEach;

    private CancellationLeakExtension(Supplier<CancellationRegistry> registry, boolean afterEach) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.afterEach = afterEach;
    }

    /** Checks after every test; register as an instance field. */
    public static CancellationLeakExtension afterEachTest(Supplier<CancellationRegistry> registry) {
        return new CancellationLeakExtension(registry, true);
    }

    /** Checks once after the whole class; register as a static field. */
    public static CancellationLeakExtension afterAllTests(Supplier<CancellationRegistry> registry) {
        return new CancellationLeakExtension(registry, false);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        if (afterEach) {
            check(context);
        }
    }

    @Override
    public void afterAll(ExtensionContext context) {
        if (!afterEach) {
            check(context);
        }
    }

    private void check(ExtensionContext context) {
        CancellationRegistry current = registry.get();
        if (current == null) {
            return;
        }
        try {
            current.assertNoLiveRegistrations();
        } catch (IllegalStateException e) {
            throw new AssertionError(context.getDisplayName() + " leaked registrations: " + e.getMessage(), e);
        }
    }
}
