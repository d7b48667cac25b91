package dev.ripcord.deploy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ./ripcord images --air-gapped} produces every image the deployment files run: Ripcord's three, tagged with
 * the build's version, and a stand-in (docker/air-gapped/stand-ins.sh) for every base image the Dockerfile, the
 * compose files and the Kubernetes manifests name. A new base image anywhere fails here until it has one.
 */
class AirGappedImagesTest {

    private static final Pattern ARG_IMAGE = Pattern.compile("(?m)^ARG [A-Z_]*IMAGE=(\\S+)$");

    /** The tags stand-ins.sh knows how to build: the labels of its final case statement. */
    private static Set<String> standIns() {
        Set<String> tags = new TreeSet<>();
        Matcher m = Pattern.compile("(?m)^    ([a-z0-9./-]+:[A-Za-z0-9.-]+)\\) ").matcher(Repo.read("docker/air-gapped/stand-ins.sh"));
        while (m.find()) {
            tags.add(m.group(1));
        }
        return tags;
    }

    private static Set<String> ripcordImages() {
        Set<String> images = new TreeSet<>();
        for (String service : List.of("gateway", "prefill", "decode")) {
            images.add("ripcord/" + service + ":" + Repo.version());
        }
        return images;
    }

    @Test
    void everyBaseImageOfTheDockerfileAndComposeFilesHasAStandIn() {
        Set<String> bases = new TreeSet<>();
        Matcher m = ARG_IMAGE.matcher(Repo.read("Dockerfile"));
        while (m.find()) {
            bases.add(m.group(1));
        }
        assertThat(bases).as("Dockerfile bases").containsExactlyInAnyOrder("eclipse-temurin:25-jdk", "eclipse-temurin:25-jre");
        for (String file : List.of("docker-compose.yml", "docker-compose.kafka-cluster.yml")) {
            Map<String, Object> services = Yaml.map(Yaml.document(Repo.path(file)).get("services"));
            services.forEach((name, definition) -> {
                Map<String, Object> service = Yaml.map(definition);
                Object image = service.get("image");
                if (image != null && !service.containsKey("profiles") && !String.valueOf(image).startsWith("ripcord/")) {
                    bases.add(String.valueOf(image));
                }
            });
        }
        assertThat(standIns()).as("stand-ins.sh").containsAll(bases);
        // The script's own list of bases (./ripcord images --air-gapped) reads the same files the same way.
        assertThat(Repo.read("ripcord")).contains("air_gapped_bases", "docker/air-gapped/stand-ins.sh \"${bases[@]}\"");
    }

    @Test
    void theKubernetesManifestsRunOnlyImagesThisBuildProduces() {
        Set<String> produced = new TreeSet<>(standIns());
        produced.addAll(ripcordImages());
        assertThat(Repo.read("ripcord")).contains("-t \"ripcord/$service:$version\"");
        for (String dir : List.of("k8s/overlays/dev", "k8s/overlays/prod", "k8s/overlays/strimzi")) {
            List<String> images = new ArrayList<>();
            KubernetesManifestsTest.rendered(dir).forEach(resource -> collectImages(resource, images));
            assertThat(images).as("%s images", dir).isNotEmpty();
            for (String image : images) {
                // prod and strimzi pull Ripcord's images from the operator's registry (a placeholder until set).
                assertThat(image.replaceFirst("^registry\\.invalid/", "")).as("%s: %s", dir, image).isIn(produced);
            }
        }
    }

    private static void collectImages(Object node, List<String> out) {
        if (node instanceof Map<?, ?> map) {
            map.forEach((key, value) -> {
                if ("image".equals(key) && value instanceof String s) {
                    out.add(s);
                } else {
                    collectImages(value, out);
                }
            });
        } else if (node instanceof List<?> list) {
            list.forEach(item -> collectImages(item, out));
        }
    }
}
