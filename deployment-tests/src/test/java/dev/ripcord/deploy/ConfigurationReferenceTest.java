package dev.ripcord.deploy;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/configuration.md lists every {@code ripcord.*} property, and nothing else under that prefix.
 *
 * <p>"Every property" is what the code accepts: the configuration metadata each module's
 * {@code spring-boot-configuration-processor} writes for its {@code @ConfigurationProperties}
 * ({@code META-INF/spring-configuration-metadata.json}, on this module's class path through the three services),
 * plus the {@code ${ripcord.…}} placeholders of {@code @Value} injections in the modules' sources. Environment
 * variables in docker-compose.yml and the Kubernetes manifests must name one of those properties (or one of
 * Spring's), so that a misspelt variable fails here instead of being ignored by a running service.
 */
class ConfigurationReferenceTest {

    private static final Pattern DOCUMENTED = Pattern.compile("^\\|\\s*`(ripcord\\.[a-z0-9.\\-\\[\\]]+)`");
    private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{(ripcord\\.[a-z0-9.\\-]+)[:}]");

    @Test
    void everyRipcordPropertyIsDocumentedAndEveryDocumentedOneExists() {
        Set<String> accepted = ripcordProperties();
        Set<String> documented = documented();
        assertThat(accepted).as("metadata found on the class path").isNotEmpty();
        Set<String> undocumented = new TreeSet<>(accepted);
        undocumented.removeAll(documented);
        assertThat(undocumented).as("ripcord.* properties the code accepts but docs/configuration.md does not list")
                .isEmpty();
        Set<String> stale = new TreeSet<>(documented);
        stale.removeAll(accepted);
        assertThat(stale).as("properties docs/configuration.md lists but no code reads").isEmpty();
    }

    @Test
    void everyModuleWithConfigurationPropertiesPublishesItsMetadata() {
        Set<String> prefixes = new TreeSet<>();
        for (String property : metadataProperties()) {
            String[] parts = property.split("\\.");
            prefixes.add(parts[0] + "." + parts[1]);
        }
        // cancel-events, worker-support (engine, kv, internal), prefill, decode, gateway.
        assertThat(prefixes).contains("ripcord.cancel", "ripcord.engine", "ripcord.kv", "ripcord.prefill",
                "ripcord.decode", "ripcord.gateway");
    }

    @Test
    void environmentVariablesInDeploymentFilesNameRealProperties() {
        Set<String> known = new TreeSet<>();
        for (String property : allMetadataProperties()) {
            known.add(envName(property, true));
            known.add(envName(property, false));
        }
        ripcordProperties().forEach(p -> {
            known.add(envName(p, true));
            known.add(envName(p, false));
        });
        // A Map-valued property (spring.kafka.properties: Kafka client settings) takes any key below its name.
        Set<String> mapPrefixes = new TreeSet<>();
        for (String property : mapMetadataProperties()) {
            mapPrefixes.add(envName(property, true) + "_");
        }
        Map<String, List<String>> unknown = new TreeMap<>();
        for (String file : deploymentFiles()) {
            for (String variable : environmentVariables(file)) {
                if (Stream.of("RIPCORD_", "SPRING_", "MANAGEMENT_", "SERVER_").anyMatch(variable::startsWith)
                        && !known.contains(variable) && mapPrefixes.stream().noneMatch(variable::startsWith)) {
                    unknown.computeIfAbsent(file, f -> new ArrayList<>()).add(variable);
                }
            }
        }
        assertThat(unknown).as("environment variables that map to no property (Spring's relaxed binding)").isEmpty();
    }

    /** Spring's environment-variable form: upper case, dots to underscores, dashes dropped (or, legacy, to _). */
    static String envName(String property, boolean dropDashes) {
        String name = property.replaceAll("\\[\\d*]", "").toUpperCase().replace('.', '_');
        return dropDashes ? name.replace("-", "") : name.replace('-', '_');
    }

    private static Set<String> ripcordProperties() {
        Set<String> properties = new TreeSet<>(metadataProperties());
        properties.addAll(valuePlaceholders());
        return properties;
    }

    private static Set<String> metadataProperties() {
        Set<String> ripcord = new TreeSet<>();
        for (String property : allMetadataProperties()) {
            if (property.startsWith("ripcord.")) {
                ripcord.add(property);
            }
        }
        return ripcord;
    }

    /** Every property in every metadata file on the class path: ours and Spring's. */
    private static Set<String> allMetadataProperties() {
        return metadataPropertiesWhere(property -> true);
    }

    /** Properties whose metadata type is a {@code java.util.Map}: their keys are free. */
    private static Set<String> mapMetadataProperties() {
        return metadataPropertiesWhere(property -> property.path("type").asText().startsWith("java.util.Map<"));
    }

    private static Set<String> metadataPropertiesWhere(java.util.function.Predicate<JsonNode> filter) {
        Set<String> properties = new TreeSet<>();
        ObjectMapper json = new ObjectMapper();
        try {
            for (URL url : Collections.list(ConfigurationReferenceTest.class.getClassLoader()
                    .getResources("META-INF/spring-configuration-metadata.json"))) {
                try (InputStream in = url.openStream()) {
                    for (JsonNode property : json.readTree(in).path("properties")) {
                        if (filter.test(property)) {
                            properties.add(property.path("name").asText());
                        }
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return properties;
    }

    /** {@code ${ripcord.…}} in the main sources of every module (properties read with {@code @Value}). */
    private static Set<String> valuePlaceholders() {
        Set<String> properties = new TreeSet<>();
        try (Stream<Path> files = Files.walk(Repo.root(), 12)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java"))
                    .filter(f -> f.toString().contains("/src/main/java/")).toList()) {
                Matcher m = PLACEHOLDER.matcher(Files.readString(file));
                while (m.find()) {
                    properties.add(m.group(1));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return properties;
    }

    private static Set<String> documented() {
        Set<String> documented = new TreeSet<>();
        for (String line : Repo.read("docs/configuration.md").split("\n")) {
            Matcher m = DOCUMENTED.matcher(line);
            if (m.find()) {
                documented.add(m.group(1));
            }
        }
        return documented;
    }

    private static List<String> deploymentFiles() {
        List<String> files = new ArrayList<>(List.of("docker-compose.yml"));
        try (Stream<Path> k8s = Files.walk(Repo.path("k8s"))) {
            k8s.filter(f -> f.toString().endsWith(".yaml")).sorted()
                    .forEach(f -> files.add(Repo.root().relativize(f).toString()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return files;
    }

    /** Keys of compose {@code environment} maps, ConfigMap {@code data} and container {@code env} names. */
    private static Set<String> environmentVariables(String file) {
        Set<String> variables = new TreeSet<>();
        for (Map<String, Object> document : Yaml.documents(Repo.path(file))) {
            collect(document, variables);
        }
        return variables;
    }

    private static void collect(Object node, Set<String> variables) {
        if (node instanceof Map<?, ?> map) {
            for (Map.Entry<?, ?> e : map.entrySet()) {
                String key = String.valueOf(e.getKey());
                if ((key.equals("environment") || key.equals("data") || key.equals("stringData"))
                        && e.getValue() instanceof Map<?, ?> vars) {
                    vars.keySet().forEach(k -> variables.add(String.valueOf(k)));
                } else if (key.equals("env") && e.getValue() instanceof List<?> vars) {
                    vars.forEach(v -> variables.add(String.valueOf(Yaml.map(v).get("name"))));
                } else {
                    collect(e.getValue(), variables);
                }
            }
        } else if (node instanceof List<?> list) {
            list.forEach(v -> collect(v, variables));
        }
    }
}
