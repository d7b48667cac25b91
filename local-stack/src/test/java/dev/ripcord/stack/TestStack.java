package dev.ripcord.stack;

import java.io.PrintStream;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import dev.ripcord.engine.Preset;
import dev.ripcord.protocol.WorkerStatus;
import org.awaitility.Awaitility;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A running {@link LocalStack} as tests see it: where its services are, clients for its public and internal APIs,
 * the single-process reference engine for the same model, and the check that nothing is left behind.
 *
 * <p>Owned by {@link StackExtension} (one per distinct set of properties per test run); tests must not close it.
 * {@link #close()} stops the stack and frees the reference engine; a JVM shutdown hook does the same if the test
 * JVM is stopped before JUnit closes it, so no service JVM outlives the run.
 */
public final class TestStack implements AutoCloseable {

    private final String name;
    private final Map<String, String> properties;
    private final LocalStack stack;
    private final TestStacks.Instances instances;
    private final GatewayClient gateway;
    private final WorkerClient workers;
    private final Thread shutdownHook;
    private ReferenceEngine reference;

    private TestStack(String name, Map<String, String> properties, TestStacks.Instances instances, LocalStack stack) {
        this.name = name;
        this.properties = Map.copyOf(properties);
        this.instances = instances;
        this.stack = stack;
        this.gateway = new GatewayClient(URI.create(stack.url(Role.GATEWAY)));
        this.workers = new WorkerClient(URI.create(stack.url(Role.PREFILL)), URI.create(stack.url(Role.DECODE)));
        this.shutdownHook = new Thread(stack::close, "test-stack-" + name + "-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /**
     * Starts a stack with exactly {@code properties} on free ports, logging to {@code logDir}, and waits until every
     * service is healthy.
     *
     * @param console where to relay service output, or {@code null} for the log files only
     */
    public static TestStack start(String name, Map<String, String> properties, Path logDir, PrintStream console) {
        return start(name, properties, TestStacks.Instances.ONE_EACH, logDir, console);
    }

    /** As {@link #start(String, Map, Path, PrintStream)}, with {@code instances} of each role. */
    public static TestStack start(String name, Map<String, String> properties, TestStacks.Instances instances,
                                  Path logDir, PrintStream console) {
        // Before the long start of the services, during which a concurrent build in the same working tree may
        // rewrite the engine's jar under this JVM: load the engine's classes while the jar is whole.
        ReferenceEngine.loadEngineClasses();
        LocalStack stack = LocalStack.start(TestStacks.options(properties, instances, logDir), console);
        return new TestStack(name, properties, instances, stack);
    }

    /**
     * A test stack around {@code stack}, started by the caller with options of its own (a bench's external cluster
     * or proxies); {@code properties} and {@code instances} must be what it was started with.
     */
    public static TestStack of(String name, Map<String, String> properties, TestStacks.Instances instances,
                               LocalStack stack) {
        return new TestStack(name, properties, instances, stack);
    }

    /** The stack itself: to kill, restart or stop one of its processes. */
    public LocalStack localStack() {
        return stack;
    }

    public String name() {
        return name;
    }

    /** The Spring properties every service of this stack was started with. */
    public Map<String, String> properties() {
        return properties;
    }

    /** The base URL of {@code role}'s first instance. */
    public URI url(Role role) {
        return URI.create(stack.url(role));
    }

    /** The base URL of instance {@code index} (from 0) of {@code role}. */
    public URI url(Role role, int index) {
        return URI.create(stack.url(role, index));
    }

    /** Where {@code role}'s first instance answers actuator (its management port, loopback only). */
    public URI managementUrl(Role role) {
        return URI.create(stack.managementUrl(role));
    }

    /** How many instances of each role this stack runs. */
    public TestStacks.Instances instances() {
        return instances;
    }

    /** The Kafka bootstrap servers of this stack's broker. */
    public String bootstrapServers() {
        return stack.bootstrapServers();
    }

    /** A client of gateway {@code index} (from 0); {@link #gateway()} is gateway 0's. */
    public GatewayClient gateway(int index) {
        return index == 0 ? gateway : new GatewayClient(url(Role.GATEWAY, index));
    }

    /** A client of prefill instance {@code prefill} and decode instance {@code decode}. */
    public WorkerClient workers(int prefill, int decode) {
        return prefill == 0 && decode == 0 ? workers
                : new WorkerClient(url(Role.PREFILL, prefill), url(Role.DECODE, decode));
    }

    public Path logFile(Role role) {
        return stack.logFile(role);
    }

    /** The API key the gateway accepts (generated at start), or null if the stack runs open. */
    public String apiKey() {
        return stack.apiKey();
    }

    /** The token the workers require on {@code /internal/**}. */
    public String internalToken() {
        return stack.internalToken();
    }

    public GatewayClient gateway() {
        return gateway;
    }

    public WorkerClient workers() {
        return workers;
    }

    public Preset preset() {
        return presetOf(properties);
    }

    public long seed() {
        return seedOf(properties);
    }

    private static Preset presetOf(Map<String, String> properties) {
        return Preset.byName(properties.getOrDefault("ripcord.engine.preset", "small"));
    }

    private static long seedOf(Map<String, String> properties) {
        return Long.parseLong(properties.getOrDefault("ripcord.engine.seed", "42"));
    }


    /** The model id the gateway serves: {@code ripcord-<preset>} unless a property names another. */
    public String modelName() {
        return properties.getOrDefault("ripcord.engine.model-name", "ripcord-" + preset().id());
    }

    /** The engine the workers run, in this JVM: same preset, same seed. Created on first use. */
    public synchronized ReferenceEngine reference() {
        if (reference == null) {
            reference = new ReferenceEngine(preset(), seed());
        }
        return reference;
    }

    /**
     * Waits until both workers hold nothing for any request: no KV pages, no transfer session, no registration,
     * nothing queued or running, and exactly one transfer region (the engine's page pool, registered for as long
     * as the worker lives). Awaits the state, not a time: pages come back only after a transfer session is
     * released, which may follow the last token by a moment.
     */
    public void awaitWorkersIdle() {
        for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
            for (int i = 0; i < instances.of(role); i++) {
                WorkerClient client = role == Role.PREFILL ? workers(i, 0) : workers(0, i);
                Awaitility.await("%s %d holds nothing after its requests ended".formatted(role.shortName(), i))
                        .atMost(Duration.ofSeconds(30))
                        .pollInterval(Duration.ofMillis(50))
                        .untilAsserted(() -> assertIdle(client.status(role)));
            }
        }
    }

    private static void assertIdle(WorkerStatus status) {
        assertThat(status.livePages()).as("%s livePages", status.role()).isZero();
        assertThat(status.liveSessions()).as("%s liveSessions", status.role()).isZero();
        assertThat(status.liveRegistrations()).as("%s liveRegistrations", status.role()).isZero();
        assertThat(status.liveRegions()).as("%s liveRegions (the page pool only)", status.role()).isEqualTo(1);
        assertThat(status.queued()).as("%s queued", status.role()).isZero();
        assertThat(status.running()).as("%s running", status.role()).isZero();
    }

    @Override
    public synchronized void close() {
        try {
            stack.close();
        } finally {
            if (reference != null) {
                reference.close();
            }
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException alreadyShuttingDown) {
                // The hook is running or about to; it closes the stack, which is idempotent.
            }
        }
    }

    @Override
    public String toString() {
        return "TestStack[" + name + ", gateway " + stack.url(Role.GATEWAY) + ", " + properties + "]";
    }
}
