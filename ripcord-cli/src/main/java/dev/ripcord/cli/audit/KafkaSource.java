package dev.ripcord.cli.audit;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.lifecycle.LifecycleEventCodec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the lifecycle and cancellations topics for a time range, without a consumer group (partitions are assigned,
 * nothing is committed: an audit leaves no trace on the cluster). Records are selected by their Kafka timestamp
 * (broker time on our topics), from the first offset at or after {@code from} up to the end offsets taken when the
 * read starts, keeping those stamped at or before {@code to}.
 */
final class KafkaSource {

  private final Properties config;
  private final Duration timeout;

  KafkaSource(String bootstrap, Map<String, String> clientProperties, Duration timeout) {
    this.timeout = timeout;
    config = new Properties();
    config.putAll(clientProperties);
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    config.put(ConsumerConfig.CLIENT_ID_CONFIG, "ripcord-audit");
    config.putIfAbsent(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    config.putIfAbsent(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
  }

  /** Reads both topics into {@code input}; a topic that does not exist is reported in {@code missing}. */
  void read(String lifecycleTopic, String cancelTopic, Instant from, Instant to, AuditInput input,
      List<String> missing) {
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
      Map<String, List<PartitionInfo>> topics = consumer.listTopics(timeout);
      List<TopicPartition> partitions = new ArrayList<>();
      for (String topic : List.of(lifecycleTopic, cancelTopic)) {
        List<PartitionInfo> infos = topics.get(topic);
        if (infos == null) {
          missing.add(topic);
          continue;
        }
        infos.forEach(p -> partitions.add(new TopicPartition(p.topic(), p.partition())));
      }
      if (partitions.isEmpty()) {
        return;
      }
      consumer.assign(partitions);
      Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, timeout);
      Map<TopicPartition, Long> query = new HashMap<>();
      partitions.forEach(p -> query.put(p, from.toEpochMilli()));
      Map<TopicPartition, OffsetAndTimestamp> starts = consumer.offsetsForTimes(query, timeout);
      Map<TopicPartition, Long> remaining = new HashMap<>();
      for (TopicPartition p : partitions) {
        OffsetAndTimestamp start = starts.get(p);
        long offset = start == null ? ends.get(p) : start.offset();
        consumer.seek(p, offset);
        if (offset < ends.get(p)) {
          remaining.put(p, ends.get(p));
        }
      }
      consumer.pause(partitions.stream().filter(p -> !remaining.containsKey(p)).toList());
      long deadline = System.nanoTime() + timeout.toNanos() * 4;
      while (!remaining.isEmpty()) {
        if (System.nanoTime() > deadline) {
          throw new TimeoutException("reading " + remaining.keySet() + " took too long");
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          Long end = remaining.get(new TopicPartition(r.topic(), r.partition()));
          if (end == null || r.offset() >= end || Instant.ofEpochMilli(r.timestamp()).isAfter(to)) {
            continue;
          }
          accept(r, r.topic().equals(lifecycleTopic), input);
        }
        // By position, not by the last record seen: compaction (the cancellations topic) leaves offset gaps.
        for (TopicPartition p : List.copyOf(remaining.keySet())) {
          if (consumer.position(p, timeout) >= remaining.get(p)) {
            remaining.remove(p);
            consumer.pause(List.of(p));
          }
        }
      }
    }
  }

  private static void accept(ConsumerRecord<byte[], byte[]> r, boolean lifecycle, AuditInput input) {
    String where = r.topic() + "[" + r.partition() + "]@" + r.offset();
    try {
      if (lifecycle) {
        input.events.add(LifecycleEventCodec.decode(r.value()));
      } else {
        input.cancels.add(CancelEventCodec.decode(r.value()));
      }
    } catch (RuntimeException e) {
      input.skipped.add(where + ": " + e.getMessage());
    }
  }
}
