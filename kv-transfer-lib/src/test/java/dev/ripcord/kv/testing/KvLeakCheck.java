package dev.ripcord.kv.testing;

import dev.ripcord.kv.session.LiveResources;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test class that leaves any agent, region or transfer session of this library live, or that released
 * one of them, a fence slot or a shared-memory mapping twice (recorded where the second release happened).
 *
 * <pre>{@code
 * @ExtendWith(KvLeakCheck.class)
 * class DecodeTransferTest { ... }
 * }</pre>
 *
 * Before the class runs it notes what is already live (so classes sharing a JVM do not blame each other); after
 * the class it waits up to {@code ripcord.kv.leakCheck.timeoutMillis} (default 5000) for releases still in
 * flight, then fails with the description of every resource the class created and did not release (request ids
 * included). A test fixture: it ships in kv-transfer-lib's test-jar ({@code <type>test-jar</type>}, test scope),
 * never in the main jar, so services' tests can use it and no production classpath carries JUnit.
 */
public final class KvLeakCheck implements BeforeAllCallback, AfterAllCallback {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(KvLeakCheck.class);
    private static final String BASELINE = "baseline";

    @Override
    public void beforeAll(ExtensionContext context) {
        Set<Long> ids = new HashSet<>();
        LiveResources.snapshot().forEach(e -> ids.add(e.id()));
        LiveResources.violations().forEach(v -> ids.add(v.id()));
        context.getStore(NS).put(BASELINE, ids);
    }

    @Override
    public void afterAll(ExtensionContext context) throws InterruptedException {
        @SuppressWarnings("unchecked")
        Set<Long> baseline = (Set<Long>) context.getStore(NS).get(BASELINE, Set.class);
        long timeout = Long.getLong("ripcord.kv.leakCheck.timeoutMillis", 5000);
        long deadline = System.nanoTime() + timeout * 1_000_000;
        List<LiveResources.Entry> leaked = leaked(baseline);
        while (!leaked.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
            leaked = leaked(baseline);
        }
        List<LiveResources.Violation> doubles = LiveResources.violations().stream()
                .filter(v -> !baseline.contains(v.id())).toList();
        if (!doubles.isEmpty()) {
            AssertionError e = new AssertionError(context.getDisplayName() + " released " + doubles.size()
                    + " KV transfer resource(s) twice:\n  " + doubles.stream().map(LiveResources.Violation::what)
                    .collect(Collectors.joining("\n  ")));
            doubles.forEach(v -> e.addSuppressed(v.where()));
            throw e;
        }
        if (!leaked.isEmpty()) {
            throw new AssertionError(context.getDisplayName() + " left " + leaked.size()
                    + " KV transfer resource(s) live:\n  " + leaked.stream()
                    .map(e -> e.kind() + " " + e.description()).collect(Collectors.joining("\n  ")));
        }
    }

    private static List<LiveResources.Entry> leaked(Set<Long> baseline) {
        return LiveResources.snapshot().stream().filter(e -> !baseline.contains(e.id())).toList();
    }
}
