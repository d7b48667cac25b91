package dev.ripcord.deploy;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.cancel.kafka.ProvisionedTopics;
import dev.ripcord.gateway.relay.CancelRelayProperties;
import dev.ripcord.gateway.routing.prefix.RoutingProperties;
import dev.ripcord.lifecycle.kafka.LifecycleProperties;
import dev.ripcord.prefill.prefix.CacheEventsProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One Kafka ACL entry (allow): a Ripcord service's user may perform {@code operation} on a topic or consumer group
 * ({@code prefixed}: every name that starts with {@code name}).
 *
 * @param user the Kafka user name ({@link #user})
 */
record KafkaAcl(String user, String resourceType, String name, boolean prefixed, String operation) {

    static final List<String> SERVICES = List.of("gateway", "prefill", "decode");

    /** The Kafka user a service authenticates as. */
    static String user(String service) {
        return "ripcord-" + service;
    }

    /**
     * Exactly what the services need, on exactly the topics they use, read from their own defaults: the gateway
     * publishes cancels and lifecycle records and shares the cancel-relay topic with the other gateways (no consumer
     * group) and reads the prefix-cache topic (no consumer group either), which the prefill workers write; each worker
     * consumes the cancellations (one group per process, under
     * {@code ripcord-cancel.<spring.application.name>.}), publishes dead letters and lifecycle records. Describe
     * goes with every topic a client uses (metadata, the binder's topic check). Nothing may create topics or ACLs.
     */
    static Set<KafkaAcl> theServicesNeed() {
        Binder defaults = new Binder(new MapConfigurationPropertySource(Map.of()));
        CancelProperties cancel = defaults.bindOrCreate("ripcord.cancel", CancelProperties.class);
        String lifecycle = defaults.bindOrCreate("ripcord.lifecycle", LifecycleProperties.class).topic();
        String relay = defaults.bindOrCreate("ripcord.gateway.cancel-relay", CancelRelayProperties.class).topic();
        String prefixCache = defaults.bindOrCreate("ripcord.prefill.cache-events", CacheEventsProperties.class).topic();
        assertThat(defaults.bindOrCreate("ripcord.gateway.routing", RoutingProperties.class).cacheEventsTopic())
                .as("the gateways read the topic the prefill workers write").isEqualTo(prefixCache);
        Set<KafkaAcl> acls = new LinkedHashSet<>();
        topic(acls, "gateway", cancel.topic(), "Write", "Describe");
        topic(acls, "gateway", lifecycle, "Write", "Describe");
        topic(acls, "gateway", relay, "Read", "Write", "Describe");
        topic(acls, "gateway", prefixCache, "Read", "Describe");
        topic(acls, "prefill", prefixCache, "Write", "Describe");
        for (String worker : List.of("prefill", "decode")) {
            topic(acls, worker, cancel.topic(), "Read", "Describe");
            topic(acls, worker, cancel.dltTopic(), "Write", "Describe");
            topic(acls, worker, lifecycle, "Write", "Describe");
            String applicationName = String.valueOf(Yaml.at(Repo.applicationYml(worker), "spring.application.name"));
            String group = ProvisionedTopics.consumerGroup(applicationName, "instance");
            assertThat(group).as("%s's consumer group", worker).endsWith("." + applicationName + ".instance");
            acls.add(new KafkaAcl(user(worker), "group", group.substring(0, group.length() - "instance".length()),
                    true, "Read"));
        }
        return acls;
    }

    /** The topics the ACLs name. */
    static Set<String> topics(Set<KafkaAcl> acls) {
        Set<String> topics = new LinkedHashSet<>();
        acls.stream().filter(a -> a.resourceType().equals("topic")).forEach(a -> topics.add(a.name()));
        return topics;
    }

    private static void topic(Set<KafkaAcl> acls, String service, String topic, String... operations) {
        for (String operation : operations) {
            acls.add(new KafkaAcl(user(service), "topic", topic, false, operation));
        }
    }
}
