package dev.ripcord.gateway.routing.prefix;

import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

import dev.ripcord.gateway.resilience.ResilienceProperties;
import dev.ripcord.gateway.resilience.WorkerResilience;
import dev.ripcord.gateway.routing.Affinity;
import dev.ripcord.gateway.routing.RoutingPolicy;
import dev.ripcord.gateway.routing.WorkerPool;
import dev.ripcord.protocol.prefix.PrefixCacheEvent;
import dev.ripcord.protocol.prefix.PrefixCacheEvent.Kind;
import dev.ripcord.protocol.prefix.PrefixKeys;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.test.condition.EmbeddedKafkaCondition;
import org.springframework.kafka.test.context.EmbeddedKafka;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Cache-aware routing over a real (embedded KRaft) broker: two prefill workers publish their cache changes as the
 * prefill service does (keyed by worker, {@link PrefixCacheEvent#encode()}), and a gateway that starts only
 * afterwards rebuilds its index from the topic and sends a prompt to the worker holding its prefix.
 */
@EmbeddedKafka(topics = PrefixRoutingKafkaTest.TOPIC, partitions = 3)
class PrefixRoutingKafkaTest {

    static final String TOPIC = "prefix-cache-routing";
    static final String MODEL = "tinyllama@0123";
    static final int PAGE = 64;
    static final URI FIRST = URI.create("http://127.0.0.1:18081");
    static final URI SECOND = URI.create("http://127.0.0.1:18083");

    private static String brokers() {
        return EmbeddedKafkaCondition.getBroker().getBrokersAsString();
    }

    @Test
    void aGatewayThatStartsAfterTheEventsRebuildsItsIndexAndRoutesToTheWorkerHoldingThePrefix() throws Exception {
        int[] system = IntStream.range(0, 8 * PAGE).map(i -> 1000 + i).toArray();
        long[] keys = PrefixKeys.keys(PrefixKeys.seed(MODEL, PAGE, null), PAGE, system);
        String first = FIRST.getAuthority();
        String second = SECOND.getAuthority();
        List<PrefixCacheEvent> published = List.of(
                // the first worker's previous life held the whole prompt; it restarted and holds none of it
                new PrefixCacheEvent(first, 1, 1, Kind.CLEARED, PAGE, null),
                new PrefixCacheEvent(first, 1, 2, Kind.STORED, PAGE, keys),
                new PrefixCacheEvent(first, 2, 1, Kind.CLEARED, PAGE, null),
                new PrefixCacheEvent(first, 2, 2, Kind.STORED, PAGE, new long[] {77, 78}),
                // the second holds the prompt's first six pages, after evicting the tail of a longer chain
                new PrefixCacheEvent(second, 9, 1, Kind.CLEARED, PAGE, null),
                new PrefixCacheEvent(second, 9, 2, Kind.STORED, PAGE, keys),
                new PrefixCacheEvent(second, 9, 3, Kind.REMOVED, PAGE, Arrays.copyOfRange(keys, 6, 8)));
        try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(Map.of("bootstrap.servers", brokers(),
                "linger.ms", "0"), new StringSerializer(), new ByteArraySerializer())) {
            for (PrefixCacheEvent e : published) {
                producer.send(new ProducerRecord<>(TOPIC, e.key(), e.encode())).get();
            }
            // a redelivery of the second worker's STORED (at least once) changes nothing
            producer.send(new ProducerRecord<>(TOPIC, second, published.get(5).encode())).get();
        }

        // The gateway starts now.
        PrefixIndex index = new PrefixIndex();
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        try (PrefixCacheConsumer consumer = new PrefixCacheConsumer(index, TOPIC,
                Map.of("bootstrap.servers", brokers()), meters)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (consumer.records() < published.size() + 1 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(consumer.records()).as("every event read back from the beginning")
                    .isEqualTo(published.size() + 1);
            assertThat(index.cachedPages(second, keys)).isEqualTo(6);
            assertThat(index.cachedPages(first, keys)).as("the restarted worker's old pages are gone").isZero();
            assertThat(meters.counter("ripcord.gateway.prefix.events", "outcome", "duplicate").count()).isEqualTo(1);

            WorkerPool pool = new WorkerPool("prefill", new WorkerResilience(ResilienceProperties.defaults()),
                    RoutingPolicy.CACHE_AWARE);
            pool.update(List.of(FIRST, SECOND));
            PrefixRouting routing = new PrefixRouting(index, MODEL, 1.0);
            int[] turn = Arrays.copyOf(system, system.length + 40);
            List<URI> routed = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                try (WorkerPool.Lease lease = pool.acquire(List.of(), List.of(), routing.affinity(turn, null))) {
                    routed.add(lease.instance().uri());
                }
            }
            assertThat(routed).containsOnly(SECOND);
        }
    }

    @Test
    void withNoBrokerTheIndexStaysEmptyAndRoutingIsByLoadAlone() throws Exception {
        int closedPort;
        try (ServerSocket socket = new ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        PrefixIndex index = new PrefixIndex();
        // The constructor connects nothing: it returns at once, whatever the broker's state.
        try (PrefixCacheConsumer consumer = new PrefixCacheConsumer(index, TOPIC,
                Map.of("bootstrap.servers", "127.0.0.1:" + closedPort), new SimpleMeterRegistry())) {
            PrefixRouting routing = new PrefixRouting(index, MODEL, 1.0);
            assertThat(routing.affinity(new int[] {1, 2, 3}, null)).isSameAs(Affinity.NONE);
            WorkerPool pool = new WorkerPool("prefill", new WorkerResilience(ResilienceProperties.defaults()),
                    RoutingPolicy.CACHE_AWARE);
            pool.update(List.of(FIRST, SECOND));
            List<URI> routed = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                try (WorkerPool.Lease lease = pool.acquire(List.of(), List.of(),
                        routing.affinity(new int[] {1, 2, 3}, null))) {
                    routed.add(lease.instance().uri());
                }
            }
            assertThat(routed).containsExactlyInAnyOrder(FIRST, SECOND);
            assertThat(consumer.records()).isZero();
        }
    }
}
