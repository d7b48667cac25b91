package dev.ripcord.stack;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.ripcord.protocol.Suggestions;

/**
 * What {@code ./ripcord up} was asked for.
 *
 * @param externalKafka bootstrap servers of a broker to use instead of the embedded one, or {@code null}
 * @param kafkaPort     port of the embedded broker (default 9092)
 * @param ports         HTTP port per service
 * @param properties    Spring properties ({@code --ripcord.x=value} etc.) handed to every service, in order
 * @param root          repository root, where {@code <module>/target/*-exec.jar} are found
 * @param logDir        where each service's output is copied ({@code <role>.log})
 * @param jvmFlags      extra JVM flags for every service ({@code --jvm-flag=F} and {@code -Dname=value})
 * @param instancePorts the HTTP port of every instance per role, in instance order; the first is {@code ports}'
 *                      (one instance per role unless {@code --gateways/--prefills/--decodes} asked for more)
 * @param roleJvmFlags  JVM flags for one role's services only, after {@code jvmFlags} (none unless
 *                      {@link #withRoleJvmFlags} added some)
 */
public record StackOptions(String externalKafka, int kafkaPort, Map<Role, Integer> ports,
                           Map<String, String> properties, Path root, Path logDir, List<String> jvmFlags,
                           Map<Role, List<Integer>> instancePorts, Map<Role, List<String>> roleJvmFlags) {

    /**
     * Instance {@code i} (from 0) of a role listens on the role's port plus {@code i} times this: 8080, 8090, 8100
     * for gateways, 8081, 8091, ... for prefill, 8082, 8092, ... for decode, so no two instances collide.
     */
    public static final int INSTANCE_PORT_STRIDE = 10;

    /**
     * The usage text, from {@code up-options.txt} next to this class: the one list of {@code up}'s options. The
     * {@code ripcord} script prints the same file for {@code ./ripcord up --help} and checks arguments against it
     * before it builds anything, so an option added here must be added there (a test parses every listed option).
     */
    public static final String USAGE = readUsage();

    /** The options {@code up} takes: each {@code "  --name"} at the start of a line of {@link #USAGE}. */
    public static final Set<String> OPTIONS = matches(Pattern.compile("(?m)^  --([a-z][a-z0-9-]*)[= ]"));

    /**
     * The first segments of the Spring properties {@code up} hands to the services ({@code --ripcord.*=V} etc. in
     * {@link #USAGE}); any other {@code --key=value} is a usage error, so a typo never becomes a property silently.
     */
    public static final Set<String> PROPERTY_PREFIXES = matches(Pattern.compile("--([a-z]+)\\.\\*="));

    /**
     * Properties {@code ./ripcord up} hands to every service unless the command line gives them: the services share
     * one host, so prefill copies a request's KV straight into decode's pages through shared memory
     * ({@code ripcord.kv.backend=shm}; a worker's own default, {@code auto}, would pick the same on one host, but
     * {@code shm} says so and fails loudly if it cannot). {@code --ripcord.kv.backend=tcp} or {@code auto}
     * overrides it.
     */
    public static final Map<String, String> UP_DEFAULTS = Map.of("ripcord.kv.backend", "shm");

    /** One instance per role, on {@code ports}. */
    public StackOptions(String externalKafka, int kafkaPort, Map<Role, Integer> ports, Map<String, String> properties,
                        Path root, Path logDir, List<String> jvmFlags) {
        this(externalKafka, kafkaPort, ports, properties, root, logDir, jvmFlags, Map.of());
    }

    /** {@code instancePorts} per role, and no role-specific JVM flags. */
    public StackOptions(String externalKafka, int kafkaPort, Map<Role, Integer> ports, Map<String, String> properties,
                        Path root, Path logDir, List<String> jvmFlags, Map<Role, List<Integer>> instancePorts) {
        this(externalKafka, kafkaPort, ports, properties, root, logDir, jvmFlags, instancePorts, Map.of());
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
        Map<Role, List<String>> byRole = new EnumMap<>(Role.class);
        roleJvmFlags.forEach((role, flags) -> byRole.put(role, List.copyOf(flags)));
        roleJvmFlags = java.util.Collections.unmodifiableMap(byRole);
    }

    /** The JVM flags of {@code role}'s services: {@link #jvmFlags}, then that role's own. */
    public List<String> jvmFlags(Role role) {
        List<String> flags = new ArrayList<>(jvmFlags);
        flags.addAll(roleJvmFlags.getOrDefault(role, List.of()));
        return List.copyOf(flags);
    }

    /** These options with {@code flags} added after every other JVM flag of {@code role}'s services. */
    public StackOptions withRoleJvmFlags(Role role, List<String> flags) {
        Map<Role, List<String>> byRole = new EnumMap<>(Role.class);
        byRole.putAll(roleJvmFlags);
        List<String> merged = new ArrayList<>(byRole.getOrDefault(role, List.of()));
        merged.addAll(flags);
        byRole.put(role, merged);
        return new StackOptions(externalKafka, kafkaPort, ports, properties, root, logDir, jvmFlags, instancePorts,
                byRole);
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
        return new StackOptions(externalKafka, kafkaPort, ports, properties, root, logDir, jvmFlags, all,
                roleJvmFlags);
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
            if (arg.startsWith("-D") && arg.indexOf('=') > 2) {
                jvmFlags.add(arg);
                continue;
            }
            if (!arg.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + arg + "' (see ./ripcord up --help)");
            }
            int eq = arg.indexOf('=');
            String key = arg.substring(2, eq < 0 ? arg.length() : eq);
            if (!OPTIONS.contains(key) && !PROPERTY_PREFIXES.contains(key.split("\\.", 2)[0])) {
                throw new IllegalArgumentException(unknown(key));
            }
            if (eq < 0) {
                throw new IllegalArgumentException("expected --" + key + "=value, got '" + arg + "'");
            }
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
                case "model", "tokenizer" -> throw new IllegalArgumentException(
                        "--" + key + " is read by ModelChoice.parse, which runs before this");
                case "warm-up" -> throw new IllegalArgumentException(
                        "--warm-up is read by LocalStack.main, which runs before this");
                case "kafka-brokers" -> throw new IllegalArgumentException(
                        "--kafka-brokers is read by KafkaCluster.parse, which runs before this");
                default -> props.put(key, value); // a property: the prefix was checked above
            }
        }
        return new StackOptions(kafka, kafkaPort, ports, props, root, logDir, jvmFlags).withInstances(counts);
    }

    /**
     * These options with {@code model}'s properties (from {@link ModelChoice#properties}) added; a property given on
     * the command line (say {@code --ripcord.engine.model-name}) keeps its value.
     */
    public StackOptions withModelProperties(Map<String, String> model) {
        return withDefaultProperties(model);
    }

    /** These options with {@code defaults} added where no property of that name is given. */
    public StackOptions withDefaultProperties(Map<String, String> defaults) {
        Map<String, String> merged = new LinkedHashMap<>(defaults);
        merged.putAll(properties);
        return new StackOptions(externalKafka, kafkaPort, ports, merged, root, logDir, jvmFlags, instancePorts,
                roleJvmFlags);
    }

    /**
     * The error for an unknown {@code --key}: with the nearest option ({@code --modle}: did you mean
     * {@code --model}?), or for a dotted key the property with its first segment corrected ({@code --ripcrod.x}:
     * did you mean {@code --ripcord.x}?).
     */
    static String unknown(String key) {
        String[] parts = key.split("\\.", 2);
        Optional<String> suggestion = parts.length == 2
                ? Suggestions.nearest(parts[0], PROPERTY_PREFIXES).map(prefix -> prefix + "." + parts[1])
                : Suggestions.nearest(key, OPTIONS);
        return "unknown option '--" + key + "'" + suggestion.map(s -> "; did you mean '--" + s + "'?").orElse("")
                + " (./ripcord up --help lists the options; Spring properties go as --"
                + String.join(".*=V, --", PROPERTY_PREFIXES) + ".*=V or -Dname=value)";
    }

    private static String readUsage() {
        try (InputStream in = StackOptions.class.getResourceAsStream("up-options.txt")) {
            if (in == null) {
                throw new IllegalStateException("up-options.txt is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).stripTrailing();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Set<String> matches(Pattern pattern) {
        Set<String> found = new LinkedHashSet<>();
        Matcher m = pattern.matcher(USAGE);
        while (m.find()) {
            found.add(m.group(1));
        }
        return Collections.unmodifiableSet(found);
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
