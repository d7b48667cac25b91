package dev.ripcord.stack;

import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import org.junit.jupiter.api.ClassDescriptor;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.ClassOrdererContext;
import org.junit.jupiter.api.Nested;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The order in which stack test classes run, and how many classes of the run are still to ask for each shared
 * stack, so that {@link StackExtension} can stop a stack as soon as the last class that needs it is done instead of
 * keeping it (three JVMs and a broker) alive, idle, until the end of the run.
 *
 * <p>Configured as the run's default class orderer ({@code junit.jupiter.testclass.order.default} in
 * {@code junit-platform.properties}); Jupiter calls it once with every top-level class of the run, before any runs,
 * and once per class with its {@code @Nested} classes. Classes are grouped by the stack they ask for (a class without
 * {@link LocalStackTest} by the first stack its {@code @Nested} classes ask for), so each shared stack starts once and
 * serves its classes one after another; within a group, a class asking for that stack alone comes before one whose
 * nested classes go on to other stacks; classes that start their own stacks come last, by name. The order changes
 * nothing a test sees: every class gets a stack with exactly its properties, idle (the extension checks that after
 * each class).
 *
 * <p>Demand is counted from the top-level call: one per class (top-level or nested) that is annotated
 * {@link LocalStackTest}. It can only be too high (a class that is disabled or filtered out after ordering never
 * finishes): then its stack lives until the end of the run, as every stack did before. A stack for properties no
 * class of the run is annotated with (a test's second stack, {@link StackExtension#stack}) is not counted and also
 * lives until the end.
 */
public final class StackSchedule implements ClassOrderer {

    private static final Map<Object, Integer> REMAINING = new HashMap<>();

    @Override
    public void orderClasses(ClassOrdererContext context) {
        List<? extends ClassDescriptor> descriptors = context.getClassDescriptors();
        List<Class<?>> classes = descriptors.stream().<Class<?>>map(ClassDescriptor::getTestClass).toList();
        if (classes.stream().noneMatch(StackSchedule::isNested)) {
            countDemand(classes);
        }
        descriptors.sort(Comparator.comparing((ClassDescriptor d) -> group(d.getTestClass()).orElse(""),
                        Comparator.comparing(String::isEmpty).thenComparing(Comparator.naturalOrder()))
                .thenComparingLong(d -> stacksOf(d.getTestClass()).distinct().count())
                .thenComparing(d -> d.getTestClass().getName()));
    }

    /**
     * Records that a class asking for {@code stack} (its key, {@link StackExtension#stackKey}) is done, and says
     * whether it was the last class of the run to ask for it: false when the run's demand for it is not known.
     */
    static synchronized boolean classDone(Object stack) {
        Integer remaining = REMAINING.get(stack);
        if (remaining == null) {
            return false;
        }
        if (remaining <= 1) {
            REMAINING.remove(stack);
            return true;
        }
        REMAINING.put(stack, remaining - 1);
        return false;
    }

    private static synchronized void countDemand(List<Class<?>> topLevel) {
        REMAINING.clear();
        topLevel.stream().flatMap(StackSchedule::stacksOf).forEach(stack -> REMAINING.merge(stack, 1, Integer::sum));
    }

    /** The stack keys of {@code testClass} and of its {@code @Nested} classes, depth first, one per class. */
    private static Stream<Object> stacksOf(Class<?> testClass) {
        Stream<Object> own = StackExtension.stackKey(testClass).stream();
        Stream<Object> nested = Stream.of(testClass.getDeclaredClasses())
                .filter(c -> AnnotationSupport.isAnnotated(c, Nested.class))
                .sorted(Comparator.comparing(StackSchedule::groupKey).thenComparing(Class::getName))
                .flatMap(StackSchedule::stacksOf);
        return Stream.concat(own, nested);
    }

    private static Optional<String> group(Class<?> testClass) {
        return stacksOf(testClass).map(Object::toString).min(Comparator.naturalOrder());
    }

    private static String groupKey(Class<?> testClass) {
        return group(testClass).orElse("\uffff");
    }

    private static boolean isNested(Class<?> testClass) {
        return testClass.getEnclosingClass() != null && !java.lang.reflect.Modifier.isStatic(testClass.getModifiers());
    }
}
