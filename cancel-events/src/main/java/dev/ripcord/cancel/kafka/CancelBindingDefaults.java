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
 *   <li>The output bindings: destinations; producer tuned for latency ({@code linger.ms=0}) and bounded blocking
 *       ({@code max.block.ms=5000}, {@code delivery.timeout.ms=30000}).</li>
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

        Binder binder = Binder.get(environment);
        boolean consume = binder.bind("ripcord.cancel.consume", Boolean.class).orElse(false);
        CancelPropagation propagation = binder.bind("ripcord.cancel.propagation", CancelPropagation.class)
                .orElse(CancelPropagation.BOTH);
        if (consume && propagation.kafka()) {
            defaults.put("spring.cloud.function.definition", CancelBindings.CONSUMER_FUNCTION);
        }
        environment.getPropertySources().addLast(new MapPropertySource(PROPERTY_SOURCE_NAME, defaults));
    }
}
