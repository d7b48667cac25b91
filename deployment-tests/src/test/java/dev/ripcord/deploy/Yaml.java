package dev.ripcord.deploy;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/** SnakeYAML with safe construction, and the casts the deployment files need, each failing with a clear message. */
final class Yaml {

    private Yaml() {
    }

    /** Every non-empty document of {@code file}, as mutable maps. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> documents(Path file) {
        LoaderOptions options = new LoaderOptions();
        options.setAllowDuplicateKeys(false);
        org.yaml.snakeyaml.Yaml yaml = new org.yaml.snakeyaml.Yaml(new SafeConstructor(options));
        List<Map<String, Object>> documents = new ArrayList<>();
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            for (Object document : yaml.loadAll(reader)) {
                if (document == null) {
                    continue;
                }
                if (!(document instanceof Map<?, ?>)) {
                    throw new IllegalArgumentException(file + ": a document is not a mapping: " + document);
                }
                documents.add((Map<String, Object>) deepCopy(document));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file, e);
        }
        return documents;
    }

    static Map<String, Object> document(Path file) {
        List<Map<String, Object>> documents = documents(file);
        if (documents.size() != 1) {
            throw new IllegalArgumentException(file + " must hold exactly one YAML document");
        }
        return documents.getFirst();
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object node) {
        if (node == null) {
            return new LinkedHashMap<>();
        }
        if (!(node instanceof Map<?, ?> map)) {
            throw new IllegalArgumentException("expected a mapping, got " + node);
        }
        return (Map<String, Object>) map;
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Object node) {
        if (node == null) {
            return List.of();
        }
        if (!(node instanceof List<?> list)) {
            throw new IllegalArgumentException("expected a list, got " + node);
        }
        return (List<Object>) list;
    }

    /** {@code path} ("spec.template.spec") from {@code root}, or {@code null} where any step is missing. */
    static Object at(Object root, String path) {
        Object node = root;
        for (String step : path.split("\\.")) {
            if (!(node instanceof Map<?, ?> map)) {
                return null;
            }
            node = map.get(step);
        }
        return node;
    }

    /** A mutable copy (maps keep their order) so that transformations never share structure. */
    static Object deepCopy(Object node) {
        if (node instanceof Map<?, ?> map) {
            Map<String, Object> copy = new LinkedHashMap<>();
            map.forEach((k, v) -> copy.put(String.valueOf(k), deepCopy(v)));
            return copy;
        }
        if (node instanceof List<?> list) {
            List<Object> copy = new ArrayList<>();
            list.forEach(v -> copy.add(deepCopy(v)));
            return copy;
        }
        return node;
    }
}
