package dev.ripcord.deploy;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.cancel.kafka.ProvisionedTopics;
import dev.ripcord.gateway.relay.CancelRelayConfiguration;
import dev.ripcord.gateway.relay.CancelRelayProperties;
import dev.ripcord.lifecycle.kafka.LifecycleAutoConfiguration;
import dev.ripcord.lifecycle.kafka.LifecycleProperties;
import dev.ripcord.prefill.prefix.CacheEventsConfiguration;
import dev.ripcord.prefill.prefix.CacheEventsProperties;
import org.apache.kafka.clients.admin.NewTopic;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/** A topic's partitions and configs, as a deployment file declares it or as the services would create it. */
record TopicSpec(int partitions, Map<String, String> config) {

    TopicSpec {
        config = Map.copyOf(config);
    }

    /**
     * The topics a {@code kafka-init} script creates, one {@code kafka-topics.sh --create} command per topic joined
     * by {@code &&}: each must be a create command with {@code --if-not-exists} and replication factor
     * {@code replicationFactor}. Its other commands (ACLs, a client configuration) are not read here.
     */
    static Map<String, TopicSpec> createdBy(String script, int replicationFactor) {
        Map<String, TopicSpec> created = new LinkedHashMap<>();
        for (String command : script.split("&&")) {
            if (!command.contains("kafka-topics.sh")) {
                continue;
            }
            Matcher topic = Pattern.compile("--topic (\\S+)").matcher(command);
            Matcher partitions = Pattern.compile("--partitions (\\d+)").matcher(command);
            assertThat(topic.find() && partitions.find()).as("a create command: %s", command).isTrue();
            Map<String, String> config = new LinkedHashMap<>();
            Matcher c = Pattern.compile("--config ([^=\\s]+)=(\\S+)").matcher(command);
            while (c.find()) {
                config.put(c.group(1), c.group(2));
            }
            assertThat(command).contains("--create", "--if-not-exists", "--replication-factor " + replicationFactor);
            created.put(topic.group(1), new TopicSpec(Integer.parseInt(partitions.group(1)), config));
        }
        return created;
    }

    /**
     * The cancellations topic and its dead-letter topic, as the services create them ({@code CancelTopics}' NewTopic
     * beans) with the defaults, the lifecycle topic as the services declare it
     * ({@code LifecycleAutoConfiguration.topic}, defaults), and the gateways' cancel-relay topic as the gateway
     * creates it ({@code CancelRelayConfiguration.topic}, defaults), and the prefix-cache topic as the prefill workers
     * declare it ({@code CacheEventsConfiguration.topic}, defaults).
     */
    static Map<String, TopicSpec> asTheServicesCreateThem() {
        return asTheServicesCreateThem(1);
    }

    /** As {@link #asTheServicesCreateThem()}, with the topics' replication factor {@code replicationFactor}. */
    static Map<String, TopicSpec> asTheServicesCreateThem(int replicationFactor) {
        Map<String, TopicSpec> topics = new LinkedHashMap<>();
        ProvisionedTopics.withReplicationFactor(replicationFactor)
                .forEach((name, spec) -> topics.put(name, new TopicSpec(spec.getKey(), spec.getValue())));
        LifecycleProperties defaults = new Binder(new MapConfigurationPropertySource(Map.of(
                "ripcord.lifecycle.replication-factor", String.valueOf(replicationFactor))))
                .bindOrCreate("ripcord.lifecycle", LifecycleProperties.class);
        NewTopic lifecycle = LifecycleAutoConfiguration.topic(defaults);
        topics.put(lifecycle.name(), new TopicSpec(lifecycle.numPartitions(), lifecycle.configs()));
        Binder cancel = new Binder(new MapConfigurationPropertySource(Map.of(
                "ripcord.cancel.replication-factor", String.valueOf(replicationFactor))));
        NewTopic relay = CancelRelayConfiguration.topic(
                cancel.bindOrCreate("ripcord.gateway.cancel-relay", CancelRelayProperties.class),
                cancel.bindOrCreate("ripcord.cancel", CancelProperties.class));
        topics.put(relay.name(), new TopicSpec(relay.numPartitions(), relay.configs()));
        CacheEventsProperties cacheEvents = new Binder(new MapConfigurationPropertySource(Map.of(
                "ripcord.prefill.cache-events.replication-factor", String.valueOf(replicationFactor))))
                .bindOrCreate("ripcord.prefill.cache-events", CacheEventsProperties.class);
        NewTopic prefixCache = CacheEventsConfiguration.topic(cacheEvents);
        topics.put(prefixCache.name(), new TopicSpec(prefixCache.numPartitions(), prefixCache.configs()));
        return topics;
    }
}
