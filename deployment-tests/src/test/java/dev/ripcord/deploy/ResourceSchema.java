package dev.ripcord.deploy;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Collection;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.gson.Gson;
import com.google.gson.JsonElement;

/**
 * Schema validation of rendered resources, offline.
 *
 * <p>Kubernetes kinds: the official Java client's models ({@code io.kubernetes:client-java-api}) are generated from
 * the Kubernetes OpenAPI document, and each carries a {@code validateJsonElement} that rejects a field the schema
 * does not define (a misspelt {@code readinesProbe} fails), a missing required field, and a value of the wrong JSON
 * type, recursively. We call it on the resource as JSON. The client version (and so the Kubernetes version) is in
 * {@code deployment-tests/pom.xml}.
 *
 * <p>Strimzi kinds: Strimzi generates its CRD schemas from its API model ({@code io.strimzi:api}); we bind the
 * resource to that model with Jackson, failing on an unknown property wherever the model does not preserve them,
 * and on any property that landed in a model object's "additional properties" bag (what Strimzi does with fields
 * its schema does not define). Required fields and value ranges of the CRDs are not checked; the tests assert the
 * ones we rely on.
 */
final class ResourceSchema {

    /** The kinds our manifests may use, with the only API version each may have. */
    private static final Map<String, String> KUBERNETES_KINDS = Map.of(
            "ConfigMap", "v1",
            "Secret", "v1",
            "Service", "v1",
            "Deployment", "apps/v1",
            "StatefulSet", "apps/v1",
            "NetworkPolicy", "networking.k8s.io/v1",
            "PodDisruptionBudget", "policy/v1",
            "HorizontalPodAutoscaler", "autoscaling/v2",
            "PersistentVolumeClaim", "v1",
            "Job", "batch/v1");

    private static final Map<String, String> STRIMZI_KINDS = Map.of(
            "Kafka", "io.strimzi.api.kafka.model.kafka.Kafka",
            "KafkaNodePool", "io.strimzi.api.kafka.model.nodepool.KafkaNodePool",
            "KafkaTopic", "io.strimzi.api.kafka.model.topic.KafkaTopic",
            "KafkaUser", "io.strimzi.api.kafka.model.user.KafkaUser");
    private static final String STRIMZI_API_VERSION = "kafka.strimzi.io/v1";

    private static final Gson GSON = new Gson();
    private static final ObjectMapper JACKSON = new ObjectMapper()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

    private ResourceSchema() {
    }

    /** The problems found in {@code resource}; empty when it is valid. */
    static List<String> problems(Map<String, Object> resource) {
        String kind = String.valueOf(resource.get("kind"));
        String apiVersion = String.valueOf(resource.get("apiVersion"));
        if (KUBERNETES_KINDS.containsKey(kind)) {
            if (!KUBERNETES_KINDS.get(kind).equals(apiVersion)) {
                return List.of(kind + " must have apiVersion " + KUBERNETES_KINDS.get(kind) + ", has " + apiVersion);
            }
            return kubernetes(kind, resource);
        }
        if (STRIMZI_KINDS.containsKey(kind)) {
            if (!STRIMZI_API_VERSION.equals(apiVersion)) {
                return List.of(kind + " must have apiVersion " + STRIMZI_API_VERSION + ", has " + apiVersion);
            }
            return strimzi(STRIMZI_KINDS.get(kind), resource);
        }
        return List.of("kind " + kind + " (" + apiVersion + ") has no schema here; add it to ResourceSchema");
    }

    private static List<String> kubernetes(String kind, Map<String, Object> resource) {
        JsonElement json = GSON.toJsonTree(resource);
        try {
            String version = String.valueOf(resource.get("apiVersion"));
            Class<?> model = Class.forName("io.kubernetes.client.openapi.models."
                    + version.substring(version.lastIndexOf('/') + 1).toUpperCase(java.util.Locale.ROOT) + kind);
            model.getMethod("validateJsonElement", JsonElement.class).invoke(null, json);
            return List.of();
        } catch (InvocationTargetException e) {
            // IllegalArgumentException for unknown and missing fields; a ClassCastException or IllegalStateException
            // from Gson when a value has the wrong JSON type.
            return List.of(e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no model for " + kind + " in client-java-api", e);
        }
    }

    private static List<String> strimzi(String className, Map<String, Object> resource) {
        Object bound;
        try {
            bound = JACKSON.convertValue(resource, Class.forName(className));
        } catch (IllegalArgumentException e) {
            return List.of(e.getMessage());
        } catch (ClassNotFoundException e) {
            throw new IllegalStateException("no Strimzi model " + className, e);
        }
        List<String> problems = new ArrayList<>();
        unknownProperties(bound, "", problems, new IdentityHashMap<>());
        return problems;
    }

    /** Walks the bound model and reports every non-empty "additional properties" bag, with its path. */
    private static void unknownProperties(Object node, String path, List<String> problems,
                                          Map<Object, Boolean> seen) {
        if (node == null || seen.put(node, Boolean.TRUE) != null) {
            return;
        }
        if (node instanceof Collection<?> items) {
            int i = 0;
            for (Object item : items) {
                unknownProperties(item, path + "[" + i++ + "]", problems, seen);
            }
            return;
        }
        if (node instanceof Map<?, ?> map) {
            map.forEach((k, v) -> unknownProperties(v, path + "." + k, problems, seen));
            return;
        }
        String pkg = node.getClass().getPackageName();
        if (!pkg.startsWith("io.strimzi.") && !pkg.startsWith("io.fabric8.")) {
            return;
        }
        for (Method getter : node.getClass().getMethods()) {
            if (getter.getParameterCount() != 0 || Modifier.isStatic(getter.getModifiers())
                    || !(getter.getName().startsWith("get") || getter.getName().startsWith("is"))
                    || Set.of("getClass", "getAdditionalProperties").contains(getter.getName())) {
                if ("getAdditionalProperties".equals(getter.getName())) {
                    Object extra = invoke(getter, node);
                    if (extra instanceof Map<?, ?> m && !m.isEmpty()) {
                        problems.add("unknown field(s) " + m.keySet() + " at " + (path.isEmpty() ? "<root>" : path));
                    }
                }
                continue;
            }
            String property = getter.getName().startsWith("is") ? getter.getName().substring(2)
                    : getter.getName().substring(3);
            unknownProperties(invoke(getter, node), path + "." + decapitalize(property), problems, seen);
        }
    }

    private static Object invoke(Method getter, Object target) {
        try {
            return getter.invoke(target);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static String decapitalize(String s) {
        return s.isEmpty() ? s : Character.toLowerCase(s.charAt(0)) + s.substring(1);
    }
}
