package dev.ripcord.cancel.kafka;

import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.TopicConfig;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.core.env.Environment;
import org.springframework.kafka.config.TopicBuilder;
import org.springframework.kafka.core.KafkaAdmin;

/**
 * The cancellations topic and its dead-letter topic as {@link NewTopic} beans, and the {@link KafkaAdmin} that
 * creates them at startup when they are absent, before any binding starts ({@code KafkaAdmin} initialises once every
 * singleton exists; bindings start afterwards, as lifecycle beans). We provision rather than let the binder create
 * topics on first use because the binder would do it with broker defaults, from whichever process got there first.
 * Any other {@code NewTopic} bean in the service (say, another Ripcord topic) is created by the same admin.
 *
 * <p>Cancellations topic: {@code cleanup.policy=compact,delete} (the key is the request ID, so compaction keeps one
 * cancel per request, and deletion drops everything after {@code retention}); {@code segment.ms} a quarter of the
 * retention, because neither compaction nor deletion touches the active segment (the broker default of 7 days would
 * keep "1 hour" of cancels for a week); {@code message.timestamp.type=LogAppendTime}, so the replay window is
 * measured by one clock and {@code offsetsForTimes} is exact. Dead-letter topic: one partition, also
 * {@code compact,delete}, keyed by the poison record's key (see {@link DeadLetterPublisher}).
 *
 * <p>An existing topic's configuration is never altered (operators may have tuned it; {@code KafkaAdmin}'s
 * {@code modifyTopicConfigs} stays off); {@code KafkaAdmin} adds partitions to one that has fewer than configured.
 * Failing to reach the broker within {@code admin-timeout} fails startup ({@code fatalIfBrokerNotAvailable}): a
 * worker that cannot see cancellations should not take traffic. {@code ripcord.cancel.provision-topics=false}
 * turns creation off ({@code autoCreate}).
 */
final class CancelTopics {

    static final String CLEANUP_POLICY = TopicConfig.CLEANUP_POLICY_COMPACT + "," + TopicConfig.CLEANUP_POLICY_DELETE;

    private CancelTopics() {
    }

    /**
     * The {@code min.insync.replicas} of a topic replicated {@code replicationFactor} times, from three replicas up:
     * a majority of them (3: 2, 5: 3), so that a write acknowledged with {@code acks=all} survives the loss of any
     * minority and writes go on with one replica down. Below three the topic gets no such setting and the broker's
     * default applies, as for any topic (see {@link #withMinInsyncReplicas}).
     */
    static int minInsyncReplicas(int replicationFactor) {
        return replicationFactor / 2 + 1;
    }

    /** {@code builder} with {@link #minInsyncReplicas} when the topic has three replicas or more. */
    static TopicBuilder withMinInsyncReplicas(TopicBuilder builder, int replicationFactor) {
        return replicationFactor >= 3
                ? builder.config(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG,
                        Integer.toString(minInsyncReplicas(replicationFactor)))
                : builder;
    }

    static NewTopic cancellationsTopic(CancelProperties p) {
        long retention = p.retention().toMillis();
        return withMinInsyncReplicas(TopicBuilder.name(p.topic()).partitions(p.partitions())
                        .replicas(p.replicationFactor()), p.replicationFactor())
                .config(TopicConfig.CLEANUP_POLICY_CONFIG, CLEANUP_POLICY)
                .config(TopicConfig.RETENTION_MS_CONFIG, Long.toString(retention))
                .config(TopicConfig.SEGMENT_MS_CONFIG, Long.toString(Math.max(1_000, retention / 4)))
                .config(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime")
                .build();
    }

    static NewTopic deadLetterTopic(CancelProperties p) {
        long retention = p.dltRetention().toMillis();
        return withMinInsyncReplicas(TopicBuilder.name(p.dltTopic()).partitions(1).replicas(p.replicationFactor()),
                        p.replicationFactor())
                .config(TopicConfig.CLEANUP_POLICY_CONFIG, CLEANUP_POLICY)
                .config(TopicConfig.RETENTION_MS_CONFIG, Long.toString(retention))
                .config(TopicConfig.SEGMENT_MS_CONFIG, Long.toString(Math.max(1_000, retention / 4)))
                .build();
    }

    /** The admin that creates every {@link NewTopic} bean: fatal when the broker cannot be reached in time. */
    static KafkaAdmin admin(CancelProperties properties, KafkaProperties kafka, Environment environment) {
        KafkaAdmin admin = new KafkaAdmin(adminConfig(properties, kafka, environment));
        admin.setFatalIfBrokerNotAvailable(true);
        admin.setAutoCreate(properties.provisionTopics());
        admin.setOperationTimeout((int) Math.max(1, properties.adminTimeout().toSeconds()));
        // Bounded: a plain close() waits for pending calls, which against a dead broker means minutes.
        admin.setCloseTimeout(5);
        return admin;
    }

    /**
     * The admin client's configuration: Boot's {@code spring.kafka.admin.*}, the binder's brokers, and the client
     * settings given to the binder (security), so that security configured in either place reaches every client.
     */
    static Map<String, Object> adminConfig(CancelProperties properties, KafkaProperties kafka,
                                           Environment environment) {
        Map<String, Object> admin = new HashMap<>(kafka.buildAdminProperties());
        // The same brokers the binder uses (CancelBindingDefaults points those at spring.kafka.bootstrap-servers).
        String brokers = environment.getProperty("spring.cloud.stream.kafka.binder.brokers");
        if (brokers != null && !brokers.isBlank()) {
            admin.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        }
        // Client settings given to the binder (security.protocol, sasl.*, ssl.*: docs/security.md) apply to this
        // admin client too, so that security configured in either place reaches every Kafka client.
        Binder.get(environment).bind(CancelAutoConfiguration.BINDER_CONFIGURATION,
                        Bindable.mapOf(String.class, String.class))
                .ifBound(configuration -> configuration.forEach((key, value) -> {
                    if (AdminClientConfig.configNames().contains(key)) {
                        // The binder reads key/trust store locations as Spring resources; Kafka wants a path.
                        admin.put(key, key.endsWith(".location") && value.startsWith("file:")
                                ? value.substring("file:".length()) : value);
                    }
                }));
        int timeoutMs = (int) Math.min(Integer.MAX_VALUE, properties.adminTimeout().toMillis());
        admin.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, timeoutMs);
        admin.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, timeoutMs);
        return admin;
    }
}
