package dev.ripcord.stack;

import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * Gives {@link LocalStackTest} classes their {@link TestStack}: one stack per distinct set of properties per test
 * run, not per class.
 *
 * <p>Design note: stacks live in the root context's store, keyed by their complete sorted property map, so they
 * outlive the class that started them and are found again by any later class with the same properties. JUnit
 * closes {@link AutoCloseable} values of a store when its context closes (the root: at the end of the run), which
 * stops every stack exactly once without a shutdown hook racing it; {@code Store.CloseableResource} is deprecated
 * in Jupiter 6 for exactly this. Starting a stack takes tens of seconds, so sharing them is what keeps the suite
 * within its time budget. A stack whose last class is done stops at once ({@link StackSchedule} knows how many
 * classes of the run ask for each, and runs them one after another): an idle stack is three JVMs and a broker that
 * the rest of the run would share two cores and the memory with.
 */
public final class StackExtension implements ParameterResolver, AfterAllCallback {

    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(StackExtension.class);
    private static final AtomicInteger STACKS = new AtomicInteger();

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == TestStack.class;
    }

    @Override
    public TestStack resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Map<String, String> overrides = overrides(context);
        TestStack stack = stack(context, overrides, instances(context));
        usedBy(context).add(stack);
        return stack;
    }

    /**
     * The shared stack with {@link TestStacks#DEFAULT_PROPERTIES} plus {@code overrides}, started if no class of
     * this run has asked for that set yet. For tests that need a second stack beside their class's one.
     */
    public static TestStack stack(ExtensionContext context, Map<String, String> overrides) {
        return stack(context, overrides, TestStacks.Instances.ONE_EACH);
    }

    /** As {@link #stack(ExtensionContext, Map)}, with {@code instances} of each role. */
    public static TestStack stack(ExtensionContext context, Map<String, String> overrides,
                                  TestStacks.Instances instances) {
        Map<String, String> properties = TestStacks.withDefaults(overrides);
        return context.getRoot().getStore(NAMESPACE).computeIfAbsent(key(properties, instances),
                k -> start(properties, instances), TestStack.class);
    }

    /** A stack's key in the store: one instance of each keeps the bare property map, as before multi-instance. */
    private static Object key(Map<String, String> properties, TestStacks.Instances instances) {
        return instances.equals(TestStacks.Instances.ONE_EACH) ? properties : new StackKey(properties, instances);
    }

    private record StackKey(Map<String, String> properties, TestStacks.Instances instances) {
    }

    private static TestStack start(Map<String, String> properties, TestStacks.Instances instances) {
        String name = properties.equals(TestStacks.withDefaults(Map.of()))
                && instances.equals(TestStacks.Instances.ONE_EACH) ? "default"
                : "stack-" + STACKS.incrementAndGet();
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/e2e-logs").resolve(name);
        try {
            long started = System.nanoTime();
            TestStack stack = TestStack.start(name, properties, instances, logDir, null);
            System.out.printf("stack %s started in %.1f s: %s, %s%n", name, (System.nanoTime() - started) / 1e9,
                    properties, instances);
            return stack;
        } catch (RuntimeException e) {
            throw new ParameterResolutionException("cannot start the local stack " + properties
                    + " (logs in " + logDir + "): " + e.getMessage(), e);
        }
    }

    /**
     * After a class, its stacks must hold nothing: the class that leaks is the one that fails. Then, if it was the
     * last class of the run to ask for its stack ({@link StackSchedule}), that stack stops now rather than idle
     * until the end of the run.
     */
    @Override
    public void afterAll(ExtensionContext context) {
        try {
            for (TestStack stack : usedBy(context)) {
                stack.awaitWorkersIdle();
            }
        } finally {
            stackKey(context.getRequiredTestClass()).filter(StackSchedule::classDone).ifPresent(key -> {
                TestStack stack = context.getRoot().getStore(NAMESPACE).remove(key, TestStack.class);
                if (stack != null) {
                    System.out.printf("stack %s stopped: no class left in this run asks for it%n", stack.name());
                    stack.close();
                }
            });
        }
    }

    private static Set<TestStack> usedBy(ExtensionContext context) {
        ExtensionContext classContext = context;
        while (classContext.getTestMethod().isPresent()) {
            classContext = classContext.getParent().orElseThrow();
        }
        @SuppressWarnings("unchecked")
        Set<TestStack> used = classContext.getStore(NAMESPACE).computeIfAbsent(
                "stacks-used", key -> Collections.newSetFromMap(new ConcurrentHashMap<>()), Set.class);
        return used;
    }

    private static TestStacks.Instances instances(ExtensionContext context) {
        LocalStackTest annotation = AnnotationSupport.findAnnotation(context.getRequiredTestClass(),
                LocalStackTest.class).orElseThrow();
        return new TestStacks.Instances(annotation.gateways(), annotation.prefills(), annotation.decodes());
    }

    private static Map<String, String> overrides(ExtensionContext context) {
        Class<?> testClass = context.getRequiredTestClass();
        LocalStackTest annotation = AnnotationSupport.findAnnotation(testClass, LocalStackTest.class)
                .orElseThrow(() -> new ParameterResolutionException(testClass.getName()
                        + " must be annotated @LocalStackTest to receive a TestStack"));
        return overrides(annotation);
    }

    /** The key of the stack {@code testClass} asks for, if it is annotated {@link LocalStackTest}. */
    static Optional<Object> stackKey(Class<?> testClass) {
        return AnnotationSupport.findAnnotation(testClass, LocalStackTest.class)
                .map(annotation -> key(TestStacks.withDefaults(overrides(annotation)), new TestStacks.Instances(
                        annotation.gateways(), annotation.prefills(), annotation.decodes())));
    }

    private static Map<String, String> overrides(LocalStackTest annotation) {
        Map<String, String> overrides = new LinkedHashMap<>();
        for (String property : annotation.properties()) {
            int eq = property.indexOf('=');
            if (eq <= 0) {
                throw new ParameterResolutionException("@LocalStackTest property '" + property
                        + "' is not key=value");
            }
            overrides.put(property.substring(0, eq).trim(), property.substring(eq + 1).trim());
        }
        return overrides;
    }
}
