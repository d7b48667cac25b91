package dev.ripcord.cancel.kafka;

/**
 * Names the Spring Cloud Stream bindings this module owns. Binding names are fixed; their destinations come from
 * {@code ripcord.cancel.topic} / {@code dlt-topic} through {@link CancelBindingDefaults}.
 */
final class CancelBindings {

    /** The consumer function bean, and so the prefix of its input binding. */
    static final String CONSUMER_FUNCTION = "ripcordCancelConsumer";
    static final String INPUT = CONSUMER_FUNCTION + "-in-0";
    static final String OUTPUT = "ripcordCancel-out-0";
    static final String DLT_OUTPUT = "ripcordCancelDlt-out-0";

    private CancelBindings() {
    }
}
