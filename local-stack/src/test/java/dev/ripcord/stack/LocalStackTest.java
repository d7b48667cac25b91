package dev.ripcord.stack;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks an end-to-end test class that runs against a real local stack (Kafka broker plus gateway, prefill and
 * decode JVMs). A {@link TestStack} parameter of any test, lifecycle method or constructor receives it. Such a class
 * is a stack test: name it {@code *IT}, so that failsafe runs it after the services' jars are packaged (surefire's
 * unit tier skips it).
 *
 * <p>Stacks are shared: every class asking for the same properties gets the same stack, started once per test
 * run and stopped at its end. A class that needs other settings names only what differs from
 * {@link TestStacks#DEFAULT_PROPERTIES}, and gets (or starts) the stack for exactly that set:
 *
 * <pre>{@code
 * @LocalStackTest(properties = {"ripcord.prefill.chunk-tokens=64", "ripcord.cancel.propagation=kafka"})
 * class KafkaOnlyCancellationIT {
 *     @Test
 *     void cancelStopsPrefill(TestStack stack) { ... }
 * }
 * }</pre>
 *
 * <p>After each class, the extension waits until both workers hold nothing (no pages, sessions or
 * registrations) and fails the class if they do not: a leak is reported by the class that caused it.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@Documented
@Inherited
@ExtendWith(StackExtension.class)
public @interface LocalStackTest {

    /** Spring properties ({@code key=value}) that differ from {@link TestStacks#DEFAULT_PROPERTIES}. */
    String[] properties() default {};

    /** How many gateways the stack runs (each routes to every worker); part of the stack's identity. */
    int gateways() default 1;

    /** How many prefill workers the stack runs; part of the stack's identity. */
    int prefills() default 1;

    /** How many decode workers the stack runs; part of the stack's identity. */
    int decodes() default 1;
}
