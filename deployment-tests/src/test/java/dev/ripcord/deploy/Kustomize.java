package dev.ripcord.deploy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Renders a Kustomize directory offline, in the JVM, for the subset of Kustomize that {@code k8s/} uses. No
 * Kustomize implementation runs on the JVM and CI has only Maven Central, so this is the narrowest renderer that
 * covers our manifests, and it refuses anything outside the subset instead of rendering it wrongly.
 *
 * <p>The subset (see also {@code k8s/README.md}):
 * <ul>
 *   <li>{@code resources}: YAML files (several documents each) and directories holding a {@code kustomization.yaml},
 *       rendered first with their own transformations, as Kustomize does;</li>
 *   <li>{@code patches} with a {@code path} only: strategic-merge patches whose target is the resource with the
 *       patch's {@code kind} and {@code metadata.name}. Merge rules: maps merge recursively, a {@code null} value
 *       removes a key, lists named {@code containers}, {@code initContainers}, {@code env} and {@code volumes} merge
 *       element by element on {@code name} and {@code volumeMounts} on {@code mountPath}; every other list is
 *       replaced;</li>
 *   <li>{@code namespace}: set on every resource (all our kinds are namespaced);</li>
 *   <li>{@code images}: {@code newName}, {@code newTag} or {@code digest} for every container and init container
 *       whose image has that name;</li>
 *   <li>{@code replicas}: {@code spec.replicas} of the Deployment or StatefulSet of that name.</li>
 * </ul>
 * Transformations apply in Kustomize's order: patches, namespace, replicas, images. The result was compared with
 * {@code kubectl kustomize} (Kustomize v5.5) for every overlay when this was written; run
 * {@code k8s/compare-with-kubectl.sh} where kubectl exists to repeat that comparison.
 */
final class Kustomize {

    private static final Set<String> SUPPORTED_FIELDS =
            Set.of("apiVersion", "kind", "resources", "patches", "namespace", "images", "replicas");
    private static final Set<String> MERGE_ON_NAME = Set.of("containers", "initContainers", "env", "volumes");
    private static final Set<String> WORKLOAD_KINDS = Set.of("Deployment", "StatefulSet");

    private Kustomize() {
    }

    /** The resources {@code dir}'s kustomization renders to, in the order they were loaded. */
    static List<Map<String, Object>> render(Path dir) {
        Path file = dir.resolve("kustomization.yaml");
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("no kustomization.yaml in " + dir);
        }
        List<Map<String, Object>> documents = Yaml.documents(file);
        if (documents.size() != 1) {
            throw new IllegalArgumentException(file + " must hold exactly one document");
        }
        Map<String, Object> k = documents.getFirst();
        for (String field : k.keySet()) {
            if (!SUPPORTED_FIELDS.contains(field)) {
                throw new IllegalArgumentException(file + ": '" + field + "' is outside the Kustomize subset that "
                        + "deployment-tests renders (" + SUPPORTED_FIELDS + "); extend Kustomize.java first");
            }
        }
        require("kustomize.config.k8s.io/v1beta1".equals(k.get("apiVersion")) && "Kustomization".equals(k.get("kind")),
                "%s: expected apiVersion kustomize.config.k8s.io/v1beta1, kind Kustomization", file);

        List<Map<String, Object>> resources = new ArrayList<>();
        for (Object entry : Yaml.list(k.get("resources"))) {
            Path path = dir.resolve((String) entry).normalize();
            if (Files.isDirectory(path)) {
                resources.addAll(render(path));
            } else {
                resources.addAll(Yaml.documents(path));
            }
        }
        for (Object entry : Yaml.list(k.get("patches"))) {
            Map<String, Object> patchEntry = Yaml.map(entry);
            require(patchEntry.keySet().equals(Set.of("path")), "%s: only 'patches: - path: <file>' is supported, got %s",
                    file, patchEntry);
            for (Map<String, Object> patch : Yaml.documents(dir.resolve((String) patchEntry.get("path")))) {
                applyPatch(resources, patch, file);
            }
        }
        if (k.get("namespace") instanceof String namespace) {
            for (Map<String, Object> resource : resources) {
                Yaml.map(resource.get("metadata")).put("namespace", namespace);
            }
        }
        for (Object entry : Yaml.list(k.get("replicas"))) {
            Map<String, Object> replicas = Yaml.map(entry);
            List<Map<String, Object>> targets = resources.stream()
                    .filter(r -> WORKLOAD_KINDS.contains(r.get("kind")) && replicas.get("name").equals(name(r)))
                    .toList();
            require(targets.size() == 1, "%s: replicas for '%s' match %d workloads", file, replicas.get("name"),
                    targets.size());
            Yaml.map(targets.getFirst().get("spec")).put("replicas", replicas.get("count"));
        }
        for (Object entry : Yaml.list(k.get("images"))) {
            Map<String, Object> image = Yaml.map(entry);
            for (Map<String, Object> resource : resources) {
                rewriteImages(resource, image);
            }
        }
        return resources;
    }

    static String name(Map<String, Object> resource) {
        return (String) Yaml.map(resource.get("metadata")).get("name");
    }

    private static void applyPatch(List<Map<String, Object>> resources, Map<String, Object> patch, Path file) {
        String kind = (String) patch.get("kind");
        String name = name(patch);
        List<Map<String, Object>> targets = resources.stream()
                .filter(r -> Objects.equals(r.get("kind"), kind) && Objects.equals(name(r), name))
                .toList();
        require(targets.size() == 1, "%s: patch for %s/%s matches %d resources", file, kind, name, targets.size());
        merge(targets.getFirst(), patch);
    }

    @SuppressWarnings("unchecked")
    private static void merge(Map<String, Object> target, Map<String, Object> patch) {
        for (Map.Entry<String, Object> e : patch.entrySet()) {
            String key = e.getKey();
            Object value = e.getValue();
            Object current = target.get(key);
            if (value == null) {
                target.remove(key);
            } else if (value instanceof Map<?, ?> patchMap && current instanceof Map<?, ?> currentMap) {
                merge((Map<String, Object>) currentMap, (Map<String, Object>) patchMap);
            } else if (value instanceof List<?> patchList && current instanceof List<?> currentList
                    && mergeKey(key) != null) {
                target.put(key, mergeList((List<Object>) currentList, (List<Object>) patchList, mergeKey(key)));
            } else {
                target.put(key, Yaml.deepCopy(value));
            }
        }
    }

    private static String mergeKey(String listName) {
        if (MERGE_ON_NAME.contains(listName)) {
            return "name";
        }
        return "volumeMounts".equals(listName) ? "mountPath" : null;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> mergeList(List<Object> current, List<Object> patch, String key) {
        List<Object> merged = new ArrayList<>(current);
        for (Object element : patch) {
            Map<String, Object> patchElement = (Map<String, Object>) element;
            Object id = patchElement.get(key);
            Map<String, Object> existing = merged.stream().map(o -> (Map<String, Object>) o)
                    .filter(m -> Objects.equals(m.get(key), id)).findFirst().orElse(null);
            if (existing == null) {
                merged.add(Yaml.deepCopy(patchElement));
            } else {
                merge(existing, patchElement);
            }
        }
        return merged;
    }

    @SuppressWarnings("unchecked")
    private static void rewriteImages(Object node, Map<String, Object> image) {
        if (node instanceof Map<?, ?> map) {
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (("containers".equals(e.getKey()) || "initContainers".equals(e.getKey()))
                        && e.getValue() instanceof List<?> containers) {
                    for (Object c : containers) {
                        rewriteImage((Map<String, Object>) c, image);
                    }
                } else {
                    rewriteImages(e.getValue(), image);
                }
            }
        } else if (node instanceof List<?> list) {
            list.forEach(o -> rewriteImages(o, image));
        }
    }

    private static void rewriteImage(Map<String, Object> container, Map<String, Object> image) {
        String current = (String) container.get("image");
        String name = imageName(current);
        if (!name.equals(image.get("name"))) {
            return;
        }
        String newName = image.containsKey("newName") ? (String) image.get("newName") : name;
        String rest = current.substring(name.length());
        if (image.get("digest") instanceof String digest) {
            rest = "@" + digest;
        } else if (image.get("newTag") != null) {
            rest = ":" + image.get("newTag");
        }
        container.put("image", newName + rest);
    }

    /** The image reference without tag or digest ({@code host:5000/a/b:tag} gives {@code host:5000/a/b}). */
    static String imageName(String image) {
        int at = image.indexOf('@');
        String withoutDigest = at < 0 ? image : image.substring(0, at);
        int colon = withoutDigest.lastIndexOf(':');
        return colon > withoutDigest.lastIndexOf('/') ? withoutDigest.substring(0, colon) : withoutDigest;
    }

    private static void require(boolean condition, String template, Object... args) {
        if (!condition) {
            throw new IllegalArgumentException(template.formatted(args));
        }
    }

    /**
     * {@code Kustomize <dir> <file>}: renders {@code dir} and compares the result, resource by resource, with
     * {@code file} (what {@code kubectl kustomize <dir>} printed); exits 1 on a difference. Used by
     * {@code k8s/compare-with-kubectl.sh}.
     */
    public static void main(String[] args) {
        Map<String, Map<String, Object>> ours = byId(render(Path.of(args[0])));
        Map<String, Map<String, Object>> theirs = byId(Yaml.documents(Path.of(args[1])));
        boolean same = ours.keySet().equals(theirs.keySet());
        if (!same) {
            System.out.println("resources differ: ours " + ours.keySet() + ", kubectl's " + theirs.keySet());
        }
        for (String id : ours.keySet()) {
            if (theirs.containsKey(id) && !ours.get(id).equals(theirs.get(id))) {
                same = false;
                System.out.println(id + " differs:\n  ours:    " + ours.get(id) + "\n  kubectl: " + theirs.get(id));
            }
        }
        System.out.println(same ? args[0] + ": same " + ours.size() + " resources as kubectl kustomize"
                : args[0] + ": DIFFERENT from kubectl kustomize");
        System.exit(same ? 0 : 1);
    }

    private static Map<String, Map<String, Object>> byId(List<Map<String, Object>> resources) {
        Map<String, Map<String, Object>> byId = new java.util.TreeMap<>();
        resources.forEach(r -> byId.put(r.get("apiVersion") + " " + r.get("kind") + " " + name(r), r));
        return byId;
    }
}
