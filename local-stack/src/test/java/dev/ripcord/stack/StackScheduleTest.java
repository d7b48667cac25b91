package dev.ripcord.stack;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.ClassDescriptor;
import org.junit.jupiter.api.ClassOrdererContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link StackSchedule} on the real stack test classes (loaded, never run): classes that share a stack run one after
 * another, and a shared stack is done exactly when the last class that asks for it is.
 */
class StackScheduleTest {

    private static final String E2E = "dev.ripcord.stack.e2e.";
    private static final String CANCEL = "dev.ripcord.stack.cancel.";

    @Test
    void classesSharingAStackRunOneAfterAnotherAndClassesWithTheirOwnStacksRunLast() {
        List<Class<?>> order = order(List.of(type(CANCEL + "BugReportScenarioIT"), type(E2E + "AuthenticationIT"),
                type(CANCEL + "WorkerFaultsIT"), type(CANCEL + "CancelPhasesIT"), type(E2E + "OpenAiSdkIT"),
                type(CANCEL + "CancelBeforeRegistrationIT"), type(E2E + "RequestIdPropagationIT")));
        List<Class<?>> bugReport = order(List.of(type(CANCEL + "BugReportScenarioIT$KafkaOnly"),
                type(CANCEL + "BugReportScenarioIT$WithoutPropagation"), type(CANCEL + "BugReportScenarioIT$BothPaths"),
                type(CANCEL + "BugReportScenarioIT$InBandOnly")));

        // The stacks in the order the classes (and BugReportScenarioIT's nested classes, in their order) ask for them.
        List<Object> stacks = new ArrayList<>();
        for (Class<?> testClass : order) {
            if (testClass == type(CANCEL + "BugReportScenarioIT")) {
                bugReport.forEach(nested -> stacks.add(properties(nested)));
            } else {
                StackExtension.stackKey(testClass).ifPresent(stacks::add);
            }
        }
        List<Object> runs = new ArrayList<>(); // consecutive askers of one stack, collapsed
        for (Object stack : stacks) {
            if (runs.isEmpty() || !runs.getLast().equals(stack)) {
                runs.add(stack);
            }
        }
        assertThat(runs).as("a stack, once left, is never asked for again").doesNotHaveDuplicates()
                .hasSize(5); // default, small with both paths, in-band, kafka, none
        assertThat(order.getLast()).as("its own stack").isEqualTo(type(CANCEL + "WorkerFaultsIT"));
        assertThat(order.indexOf(type(CANCEL + "BugReportScenarioIT")))
                .as("after the classes that need only its first stack")
                .isGreaterThan(order.indexOf(type(CANCEL + "CancelPhasesIT")))
                .isGreaterThan(order.indexOf(type(CANCEL + "CancelBeforeRegistrationIT")));
        assertThat(bugReport.getFirst()).as("the nested class on the stack it shares with the classes before it")
                .isEqualTo(type(CANCEL + "BugReportScenarioIT$BothPaths"));
    }

    @Test
    void aSharedStackIsDoneWhenTheLastClassThatAsksForItIs() {
        order(List.of(type(E2E + "AuthenticationIT"), type(E2E + "OpenAiSdkIT"), type(E2E + "RequestIdPropagationIT"),
                type(CANCEL + "CancelPhasesIT"), type(CANCEL + "BugReportScenarioIT")));
        Object defaults = properties(type(E2E + "AuthenticationIT"));
        Object both = properties(type(CANCEL + "CancelPhasesIT"));
        Object inBand = properties(type(CANCEL + "BugReportScenarioIT$InBandOnly"));

        assertThat(StackSchedule.classDone(defaults)).isFalse();
        assertThat(StackSchedule.classDone(defaults)).isFalse();
        assertThat(StackSchedule.classDone(defaults)).as("the third and last class on the default stack").isTrue();
        assertThat(StackSchedule.classDone(both)).isFalse();
        assertThat(StackSchedule.classDone(both)).as("BugReportScenarioIT.BothPaths, the last on that stack").isTrue();
        assertThat(StackSchedule.classDone(inBand)).as("its only class").isTrue();
        assertThat(StackSchedule.classDone(TestStacks.withDefaults(Map.of("ripcord.engine.seed", "7"))))
                .as("no class of the run asks for it: kept to the end").isFalse();
    }

    private static Object properties(Class<?> testClass) {
        return StackExtension.stackKey(testClass).orElseThrow();
    }

    /** The classes in the order the schedule puts them in (a top-level call also counts the run's demand). */
    private static List<Class<?>> order(List<Class<?>> classes) {
        List<ClassDescriptor> descriptors =
                new ArrayList<>(classes.stream().map(StackScheduleTest::descriptor).toList());
        new StackSchedule().orderClasses(proxy(ClassOrdererContext.class, method -> switch (method) {
            case "getClassDescriptors" -> descriptors;
            case "getConfigurationParameter" -> Optional.empty();
            default -> throw new UnsupportedOperationException(method);
        }));
        return descriptors.stream().<Class<?>>map(ClassDescriptor::getTestClass).toList();
    }

    private static ClassDescriptor descriptor(Class<?> testClass) {
        return proxy(ClassDescriptor.class, method -> switch (method) {
            case "getTestClass" -> testClass;
            case "toString" -> testClass.getName();
            default -> throw new UnsupportedOperationException(method);
        });
    }

    private static <T> T proxy(Class<T> type, java.util.function.Function<String, Object> answers) {
        return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type},
                (self, method, args) -> answers.apply(method.getName())));
    }

    private static Class<?> type(String name) {
        try {
            return Class.forName(name);
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException(e);
        }
    }
}
