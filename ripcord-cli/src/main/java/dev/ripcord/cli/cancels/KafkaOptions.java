package dev.ripcord.cli.cancels;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import picocli.CommandLine.Option;

/**
 * Where the Kafka commands connect, and with which client settings. The broker is, in order: {@code --kafka}; the
 * environment's {@code SPRING_KAFKA_BOOTSTRAP_SERVERS} (what the services read); the {@code kafka} of the stack
 * {@code ./ripcord up} is running ({@code .ripcord/stack.json} in this directory or one above it); {@code localhost:9092}.
 *
 * <p>Security is taken as the services take it (docs/security.md): the environment variables of {@code spring.kafka.*}
 * ({@code SPRING_KAFKA_SECURITY_PROTOCOL}, {@code SPRING_KAFKA_SSL_TRUST_STORE_LOCATION}/{@code _PASSWORD}/{@code _TYPE},
 * the key store likewise, and any Kafka client property as {@code SPRING_KAFKA_PROPERTIES_SASL_MECHANISM},
 * {@code SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG}, ...), then a Kafka client properties file
 * ({@code --command-config}), then {@code -X key=value}; later ones win.
 */
public final class KafkaOptions {

    static final String DEFAULT_BOOTSTRAP = "localhost:9092";
    private static final Pattern STATE_KAFKA = Pattern.compile("\"kafka\"\\s*:\\s*\"([^\"]+)\"");

    @Option(names = "--kafka", paramLabel = "HOST:PORT",
            description = "Kafka bootstrap servers (default: $SPRING_KAFKA_BOOTSTRAP_SERVERS, else the running local "
                    + "stack's broker from .ripcord/stack.json, else " + DEFAULT_BOOTSTRAP + ")")
    String kafka;

    @Option(names = "--topic", defaultValue = "ripcord.cancellations", paramLabel = "TOPIC",
            description = "the cancellations topic (default: ${DEFAULT-VALUE})")
    String topic;

    @Option(names = "--dlt-topic", defaultValue = "ripcord.cancellations.dlt", paramLabel = "TOPIC",
            description = "the dead-letter topic (default: ${DEFAULT-VALUE})")
    String dltTopic;

    @Option(names = "--command-config", paramLabel = "FILE",
            description = "Kafka client properties (security.protocol, sasl.*, ssl.*), applied after the environment's")
    Path commandConfig;

    @Option(names = {"-X", "--kafka-property"}, paramLabel = "KEY=VALUE",
            description = "one Kafka client property, applied last (repeatable)")
    Map<String, String> properties = new LinkedHashMap<>();

    /** The client configuration every client of this command starts from: bootstrap servers and security. */
    Map<String, Object> clientConfig() {
        return clientConfig(System.getenv(), Path.of("").toAbsolutePath());
    }

    Map<String, Object> clientConfig(Map<String, String> env, Path workingDir) {
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("bootstrap.servers", bootstrap(env, workingDir));
        config.putAll(fromSpringEnvironment(env));
        if (commandConfig != null) {
            Properties file = new Properties();
            try (Reader in = Files.newBufferedReader(commandConfig, StandardCharsets.UTF_8)) {
                file.load(in);
            } catch (IOException e) {
                throw new IllegalArgumentException("cannot read --command-config " + commandConfig + ": " + e);
            }
            file.forEach((k, v) -> config.put(String.valueOf(k), v));
        }
        config.putAll(properties);
        config.putIfAbsent("client.id", "ripcord-cli");
        // Fail in seconds, not minutes, when the broker is not there.
        config.putIfAbsent("default.api.timeout.ms", "10000");
        config.putIfAbsent("request.timeout.ms", "10000");
        config.putIfAbsent("socket.connection.setup.timeout.max.ms", "5000");
        return config;
    }

    String bootstrap(Map<String, String> env, Path workingDir) {
        if (kafka != null && !kafka.isBlank()) {
            return kafka;
        }
        String fromEnv = env.get("SPRING_KAFKA_BOOTSTRAP_SERVERS");
        if (fromEnv != null && !fromEnv.isBlank()) {
            return fromEnv;
        }
        return localStackKafka(workingDir).orElse(DEFAULT_BOOTSTRAP);
    }

    /** The {@code kafka} of {@code .ripcord/stack.json} in {@code dir} or the closest directory above it. */
    static Optional<String> localStackKafka(Path dir) {
        for (Path d = dir; d != null; d = d.getParent()) {
            Path state = d.resolve(".ripcord").resolve("stack.json");
            if (Files.isRegularFile(state)) {
                try {
                    Matcher m = STATE_KAFKA.matcher(Files.readString(state, StandardCharsets.UTF_8));
                    return m.find() ? Optional.of(m.group(1)) : Optional.empty();
                } catch (IOException e) {
                    return Optional.empty();
                }
            }
        }
        return Optional.empty();
    }

    /** Kafka client properties from the {@code spring.kafka.*} environment variables the services read. */
    static Map<String, Object> fromSpringEnvironment(Map<String, String> env) {
        Map<String, Object> config = new LinkedHashMap<>();
        String protocol = env.get("SPRING_KAFKA_SECURITY_PROTOCOL");
        if (protocol != null) {
            config.put("security.protocol", protocol);
        }
        for (String store : new String[] {"TRUST", "KEY"}) {
            String prefix = "SPRING_KAFKA_SSL_" + store + "_STORE_";
            String kafkaPrefix = "ssl." + store.toLowerCase(Locale.ROOT) + "store.";
            copy(env, prefix + "LOCATION", config, kafkaPrefix + "location");
            copy(env, prefix + "PASSWORD", config, kafkaPrefix + "password");
            copy(env, prefix + "TYPE", config, kafkaPrefix + "type");
        }
        copy(env, "SPRING_KAFKA_SSL_KEY_PASSWORD", config, "ssl.key.password");
        copy(env, "SPRING_KAFKA_SSL_PROTOCOL", config, "ssl.protocol");
        String properties = "SPRING_KAFKA_PROPERTIES_";
        env.forEach((name, value) -> {
            if (name.startsWith(properties) && name.length() > properties.length()) {
                config.put(name.substring(properties.length()).toLowerCase(Locale.ROOT).replace('_', '.'), value);
            }
        });
        return config;
    }

    private static void copy(Map<String, String> env, String name, Map<String, Object> config, String key) {
        String value = env.get(name);
        if (value != null) {
            // Spring resources name files as file:/path; Kafka wants the path.
            config.put(key, value.startsWith("file:") ? value.substring("file:".length()) : value);
        }
    }
}
