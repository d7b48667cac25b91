package dev.ripcord.cancel.kafka;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.InitializingBean;

/**
 * Creates the cancellations topic and its dead-letter topic at startup when they are absent, before any binding
 * starts (this bean initialises during context refresh; bindings start afterwards, and the publisher and consumer
 * beans depend on it). We provision with our own AdminClient rather than the binder's on-demand provisioning because
 * the binder would create the topic on first use, with broker defaults, from whichever process got there first.
 *
 * <p>Cancellations topic: {@code cleanup.policy=compact,delete} (the key is the request ID, so compaction keeps one
 * cancel per request, and deletion drops everything after {@code retention}); {@code segment.ms} a quarter of the
 * retention, because neither compaction nor deletion touches the active segment (the broker default of 7 days would
 * keep "1 hour" of cancels for a week); {@code message.timestamp.type=LogAppendTime}, so the replay window is
 * measured by one clock and {@code offsetsForTimes} is exact. Dead-letter topic: one partition, also
 * {@code compact,delete}, keyed by the poison record's coordinates (see {@link DeadLetterPublisher}).
 *
 * <p>An existing topic is never altered (operators may have tuned it); a {@code cleanup.policy} other than ours is
 * logged at WARN. Failing to reach the broker within {@code admin-timeout} fails startup with a message naming the
 * brokers: a worker that cannot see cancellations should not take traffic.
 */
final class TopicProvisioner implements InitializingBean {

    static final String CLEANUP_POLICY = TopicConfig.CLEANUP_POLICY_COMPACT + "," + TopicConfig.CLEANUP_POLICY_DELETE;

    private static final Logger log = LoggerFactory.getLogger(TopicProvisioner.class);

    private final CancelProperties properties;
    private final Map<String, Object> adminConfig;

    TopicProvisioner(CancelProperties properties, Map<String, Object> adminConfig) {
        this.properties = properties;
        this.adminConfig = Map.copyOf(adminConfig);
    }

    /** The configuration of the admin client this provisioner creates. */
    Map<String, Object> adminConfig() {
        return adminConfig;
    }

    @Override
    public void afterPropertiesSet() {
        if (!properties.provisionTopics()) {
            return;
        }
        Admin admin = Admin.create(adminConfig);
        try {
            ensure(admin, cancellationsTopic(properties));
            ensure(admin, deadLetterTopic(properties));
        } finally {
            // Bounded: a plain close() waits for pending calls, which against a dead broker means minutes.
            admin.close(Duration.ofSeconds(5));
        }
    }

    static NewTopic cancellationsTopic(CancelProperties p) {
        long retention = p.retention().toMillis();
        return new NewTopic(p.topic(), p.partitions(), (short) p.replicationFactor()).configs(Map.of(
                TopicConfig.CLEANUP_POLICY_CONFIG, CLEANUP_POLICY,
                TopicConfig.RETENTION_MS_CONFIG, Long.toString(retention),
                TopicConfig.SEGMENT_MS_CONFIG, Long.toString(Math.max(1_000, retention / 4)),
                TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime"));
    }

    static NewTopic deadLetterTopic(CancelProperties p) {
        long retention = p.dltRetention().toMillis();
        return new NewTopic(p.dltTopic(), 1, (short) p.replicationFactor()).configs(Map.of(
                TopicConfig.CLEANUP_POLICY_CONFIG, CLEANUP_POLICY,
                TopicConfig.RETENTION_MS_CONFIG, Long.toString(retention),
                TopicConfig.SEGMENT_MS_CONFIG, Long.toString(Math.max(1_000, retention / 4))));
    }

    private void ensure(Admin admin, NewTopic topic) {
        Duration timeout = properties.adminTimeout();
        try {
            admin.createTopics(List.of(topic)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            log.info("created topic {} (partitions={}, replication={}, {})", topic.name(), topic.numPartitions(),
                    topic.replicationFactor(), topic.configs());
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TopicExistsException) {
                checkExisting(admin, topic, timeout);
            } else {
                throw failure(topic, e.getCause());
            }
        } catch (TimeoutException e) {
            throw failure(topic, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failure(topic, e);
        }
    }

    private void checkExisting(Admin admin, NewTopic topic, Duration timeout) {
        try {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic.name());
            Config config = admin.describeConfigs(List.of(resource)).all()
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS).get(resource);
            ConfigEntry policy = config.get(TopicConfig.CLEANUP_POLICY_CONFIG);
            String actual = policy == null ? "?" : policy.value();
            if (!CLEANUP_POLICY.equals(actual)) {
                log.warn("topic {} exists with cleanup.policy={}, expected {}; left unchanged", topic.name(), actual,
                        CLEANUP_POLICY);
            }
            Collection<TopicDescription> described = admin.describeTopics(List.of(topic.name())).allTopicNames()
                    .get(timeout.toMillis(), TimeUnit.MILLISECONDS).values();
            int partitions = described.iterator().next().partitions().size();
            log.info("topic {} exists (partitions={}, cleanup.policy={})", topic.name(), partitions, actual);
        } catch (ExecutionException e) {
            throw failure(topic, e.getCause());
        } catch (TimeoutException e) {
            throw failure(topic, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failure(topic, e);
        }
    }

    private IllegalStateException failure(NewTopic topic, Throwable cause) {
        return new IllegalStateException("could not provision Kafka topic %s at %s within %s (set ripcord.cancel.provision-topics=false to skip): %s"
                .formatted(topic.name(), adminConfig.get("bootstrap.servers"), properties.adminTimeout(), cause),
                cause);
    }
}
