package dev.ripcord.cancel.kafka;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.kafka.clients.admin.NewTopic;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/**
 * The topics a service creates at start-up with the default {@code ripcord.cancel.*} settings, read from
 * {@link CancelTopics} itself (this class sits in its package for that), so that deployment files that create
 * the topics ahead of the services (compose's kafka-init, Strimzi's KafkaTopic) are checked against the code.
 */
public final class ProvisionedTopics {

    private ProvisionedTopics() {
    }

    /** Topic name to (partitions, configs), with the defaults. */
    public static Map<String, Map.Entry<Integer, Map<String, String>>> withDefaults() {
        return with(Map.of());
    }

    /** As {@link #withDefaults()}, with {@code ripcord.cancel.replication-factor} {@code replicationFactor}. */
    public static Map<String, Map.Entry<Integer, Map<String, String>>> withReplicationFactor(int replicationFactor) {
        return with(Map.of("ripcord.cancel.replication-factor", String.valueOf(replicationFactor)));
    }

    /**
     * The consumer group of a service's cancellations consumer as {@link CancelBindingDefaults} names it, for
     * {@code spring.application.name} {@code applicationName} and instance ID {@code instanceId}.
     */
    public static String consumerGroup(String applicationName, String instanceId) {
        org.springframework.core.env.StandardEnvironment environment = new org.springframework.core.env.StandardEnvironment();
        environment.getPropertySources().addFirst(new org.springframework.core.env.MapPropertySource("test", Map.of(
                "spring.application.name", applicationName, "ripcord.cancel.instance-id", instanceId)));
        new CancelBindingDefaults().postProcessEnvironment(environment, new org.springframework.boot.SpringApplication());
        return environment.getProperty("spring.cloud.stream.bindings." + CancelBindings.INPUT + ".group");
    }

    private static Map<String, Map.Entry<Integer, Map<String, String>>> with(Map<String, String> properties) {
        CancelProperties defaults = new Binder(new MapConfigurationPropertySource(properties))
                .bindOrCreate("ripcord.cancel", CancelProperties.class);
        Map<String, Map.Entry<Integer, Map<String, String>>> topics = new LinkedHashMap<>();
        for (NewTopic topic : new NewTopic[] {CancelTopics.cancellationsTopic(defaults),
                CancelTopics.deadLetterTopic(defaults)}) {
            topics.put(topic.name(), Map.entry(topic.numPartitions(), new LinkedHashMap<>(topic.configs())));
        }
        return topics;
    }
}
