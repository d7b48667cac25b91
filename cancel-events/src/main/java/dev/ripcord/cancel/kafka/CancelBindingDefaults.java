package dev.ripcord.cancel.kafka;

import java.util.LinkedHashMap;
import java.util.Map;

import dev.ripcord.cancel.CancelPropagation;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.Ordered;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;
import org.springframework.util.StringUtils;

/**
 * Spring Cloud Stream settings for this module's bindings, added as the lowest-precedence property source so that a
 * service including the library needs no stream configuration, and can still override any of it.
 *
 * <ul>
 *   <li>{@code ripcord.cancel.instance-id}: a random one when unset, fixed here (once per environment) so the consumer
 *       group and {@code origin.instance} agree.</li>
 *   <li>{@code spring.cloud.function.definition=ripcordCancelConsumer}, only when {@code ripcord.cancel.consume=true}
 *       and propagation includes Kafka. A service with functions of its own must list ours too
 *       ({@code mine;ripcordCancelConsumer}); startup fails with that advice if it does not.</li>
 *   <li>{@code spring.cloud.stream.function.autodetect=false}: the binder binds only the functions named in the
 *       definition. Otherwise a service that consumes nothing would get whatever single {@code Function} bean it
 *       happens to have (Boot customizers are Functions) bound to a Kafka topic.</li>
 *   <li>The input binding: destination = the topic; group {@code ripcord-cancel.<spring.application.name>.<instance-id>},
 *       unique per process, so every process receives every record (broadcast); no offset commits (replay is by time,
 *       see {@link ReplayWindowSeeker}); one delivery attempt (decoding failures are handled by
 *       {@link CancelEventConsumer}, never retried by the binder).</li>
 *   <li>The output bindings: destinations; producer tuned for latency ({@code linger.ms=0}, no compression, topic
 *       metadata kept however long the producer idles) and bounded blocking ({@code max.block.ms=5000},
 *       {@code delivery.timeout.ms=30000}). A publish-only service (propagation includes Kafka,
 *       {@code consume=false}: the gateway) binds the cancel output at startup
 *       ({@code spring.cloud.stream.output-bindings=ripcordCancel-out-0}), so its first cancel finds the producer
 *       ready; a service that sets {@code output-bindings} itself must list {@code ripcordCancel-out-0} too, or its
 *       first cancel pays for the binding again (it still works).</li>
 *   <li>The input binding's consumer: long polling stated explicitly ({@code fetch.min.bytes=1},
 *       {@code fetch.max.wait.ms=500}): a fetch returns as soon as a record is there.</li>
 *   <li>The binder's brokers follow {@code spring.kafka.bootstrap-servers} (default {@code localhost:9092}).</li>
 * </ul>
 *
 * Runs after config data has been loaded, so it sees application.yml, profiles, environment variables and arguments.
 */
public final class CancelBindingDefaults implements EnvironmentPostProcessor, Ordered {

    public static final String PROPERTY_SOURCE_NAME = "ripcordCancelBindingDefaults";

    private static final String BINDINGS = "spring.cloud.stream.bindings.";
    private static final String KAFKA_BINDINGS = "spring.cloud.stream.kafka.bindings.";
    private static final String TOPIC = "${ripcord.cancel.topic:ripcord.cancellations}";
    private static final String DLT_TOPIC = "${ripcord.cancel.dlt-topic:ripcord.cancellations.dlt}";
    /** Output bindings created at startup rather than on the first {@code StreamBridge.send}. */
    static final String OUTPUT_BINDINGS = "spring.cloud.stream.output-bindings";
    /** One day: the producer keeps its two topics' metadata however rarely it sends. */
    static final long PRODUCER_METADATA_MAX_IDLE_MS = 86_400_000L;

    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE;
    }

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        if (environment.getPropertySources().contains(PROPERTY_SOURCE_NAME)) {
            return;
        }
        Map<String, Object> defaults = new LinkedHashMap<>();
        if (!StringUtils.hasText(environment.getProperty("ripcord.cancel.instance-id"))) {
            defaults.put("ripcord.cancel.instance-id", CancelProperties.randomInstanceId());
        }
        defaults.put("spring.cloud.stream.function.autodetect", "false");
        defaults.put("spring.cloud.stream.kafka.binder.brokers", "${spring.kafka.bootstrap-servers:localhost:9092}");

        for (String output : new String[] {CancelBindings.OUTPUT, CancelBindings.DLT_OUTPUT}) {
            String producer = KAFKA_BINDINGS + output + ".producer.configuration.";
            defaults.put(producer + "linger.ms", "0");
            defaults.put(producer + "max.block.ms", "5000");
            defaults.put(producer + "request.timeout.ms", "10000");
            defaults.put(producer + "delivery.timeout.ms", "30000");
            // An acknowledged cancel survives a broker restart: every in-sync replica has it, and retries never
            // duplicate or reorder it (both Kafka's defaults since 3.0; stated so that an override is deliberate).
            defaults.put(producer + "acks", "all");
            defaults.put(producer + "enable.idempotence", "true");
            // A cancel is one small record: batching (linger.ms above) and compression only add time to it.
            defaults.put(producer + "compression.type", "none");
            // Kafka forgets a topic's metadata after 5 idle minutes, and the next send then waits for a metadata
            // round trip; cancels are rare, so without this the first one after a quiet spell paid for it.
            defaults.put(producer + "metadata.max.idle.ms", String.valueOf(PRODUCER_METADATA_MAX_IDLE_MS));
        }
        defaults.put(BINDINGS + CancelBindings.OUTPUT + ".destination", TOPIC);
        defaults.put(BINDINGS + CancelBindings.OUTPUT + ".content-type", "application/json");
        defaults.put(BINDINGS + CancelBindings.DLT_OUTPUT + ".destination", DLT_TOPIC);
        defaults.put(BINDINGS + CancelBindings.DLT_OUTPUT + ".content-type", "application/octet-stream");

        String input = CancelBindings.INPUT;
        defaults.put(BINDINGS + input + ".destination", TOPIC);
        defaults.put(BINDINGS + input + ".group",
                "ripcord-cancel.${spring.application.name:ripcord}.${ripcord.cancel.instance-id}");
        defaults.put(BINDINGS + input + ".consumer.max-attempts", "1");
        defaults.put(KAFKA_BINDINGS + input + ".consumer.ack-mode", "MANUAL");
        // Where a partition with nothing in the replay window starts: see ReplayWindowSeeker (no gap).
        defaults.put(KAFKA_BINDINGS + input + ".consumer.start-offset", "earliest");
        // Long polling: the broker answers a fetch as soon as fetch.min.bytes (one byte: any record) is there, and
        // only an empty fetch waits the whole fetch.max.wait.ms. So 500 ms (Kafka's default) costs a cancel no time;
        // a smaller value would only multiply idle fetches (KafkaPropagationBench compares them). Stated so that an
        // override is deliberate.
        String consumer = KAFKA_BINDINGS + input + ".consumer.configuration.";
        defaults.put(consumer + "fetch.min.bytes", "1");
        defaults.put(consumer + "fetch.max.wait.ms", "500");

        Binder binder = Binder.get(environment);
        boolean kafka = binder.bind("ripcord.cancel.propagation", CancelPropagation.class)
                .orElse(CancelPropagation.BOTH).kafka();
        boolean consume = binder.bind("ripcord.cancel.consume", Boolean.class).orElse(false);
        if (consume && kafka) {
            defaults.put("spring.cloud.function.definition", CancelBindings.CONSUMER_FUNCTION);
        }
        if (kafka && !consume) {
            // The publisher (the gateway) binds the cancel output at startup: StreamBridge sends through a channel
            // bean of the binding's name when there is one, instead of creating the binding (producer, topic lookup,
            // class loading) on the first cancel, which made that cancel 0.8-1.3 s late (KafkaPropagationBench).
            // Workers publish no cancels (only the rare dead letter) and keep the lazy binding.
            defaults.put(OUTPUT_BINDINGS, CancelBindings.OUTPUT);
        }
        environment.getPropertySources().addLast(new MapPropertySource(PROPERTY_SOURCE_NAME, defaults));
    }
}
