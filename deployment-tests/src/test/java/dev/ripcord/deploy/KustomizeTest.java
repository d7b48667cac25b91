package dev.ripcord.deploy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The Kustomize subset: the merge rules the manifests rely on, and refusal of everything outside it. */
class KustomizeTest {

    @TempDir
    Path dir;

    private void write(String name, String text) throws IOException {
        Files.createDirectories(dir.resolve(name).getParent());
        Files.writeString(dir.resolve(name), text);
    }

    @Test
    void patchesMergeContainersAndEnvByNameAndReplaceOtherLists() throws IOException {
        write("base/kustomization.yaml", """
                apiVersion: kustomize.config.k8s.io/v1beta1
                kind: Kustomization
                resources: [app.yaml]
                images: [{name: img, newTag: "2"}]
                """);
        write("base/app.yaml", """
                apiVersion: apps/v1
                kind: Deployment
                metadata: {name: app}
                spec:
                  replicas: 1
                  template:
                    spec:
                      tolerations: [{key: a}]
                      containers:
                        - name: app
                          image: img:1
                          args: [x]
                          env: [{name: A, value: "1"}, {name: B, value: "1"}]
                        - name: side
                          image: other:1
                """);
        write("over/kustomization.yaml", """
                apiVersion: kustomize.config.k8s.io/v1beta1
                kind: Kustomization
                namespace: ns
                resources: [../base]
                replicas: [{name: app, count: 3}]
                patches: [{path: patch.yaml}]
                """);
        write("over/patch.yaml", """
                apiVersion: apps/v1
                kind: Deployment
                metadata: {name: app}
                spec:
                  template:
                    spec:
                      tolerations: [{key: b}]
                      containers:
                        - name: app
                          args: [y]
                          env: [{name: B, value: "2"}, {name: C, value: "3"}]
                """);
        Map<String, Object> app = Kustomize.render(dir.resolve("over")).getFirst();
        assertThat(Yaml.at(app, "metadata.namespace")).isEqualTo("ns");
        assertThat(Yaml.at(app, "spec.replicas")).isEqualTo(3);
        assertThat(Yaml.at(app, "spec.template.spec.tolerations")).isEqualTo(List.of(Map.of("key", "b")));
        List<Object> containers = Yaml.list(Yaml.at(app, "spec.template.spec.containers"));
        assertThat(containers).hasSize(2);
        Map<String, Object> main = Yaml.map(containers.getFirst());
        assertThat(main.get("image")).isEqualTo("img:2");
        assertThat(main.get("args")).isEqualTo(List.of("y"));
        assertThat(main.get("env")).isEqualTo(List.of(Map.of("name", "A", "value", "1"),
                Map.of("name", "B", "value", "2"), Map.of("name", "C", "value", "3")));
        assertThat(Yaml.map(containers.get(1)).get("image")).isEqualTo("other:1");
    }

    @Test
    void fieldsOutsideTheSubsetAreRefused() throws IOException {
        write("k/kustomization.yaml", """
                apiVersion: kustomize.config.k8s.io/v1beta1
                kind: Kustomization
                commonLabels: {a: b}
                """);
        assertThatThrownBy(() -> Kustomize.render(dir.resolve("k"))).hasMessageContaining("commonLabels");
    }

    @Test
    void aPatchThatMatchesNothingIsAnError() throws IOException {
        write("k/kustomization.yaml", """
                apiVersion: kustomize.config.k8s.io/v1beta1
                kind: Kustomization
                patches: [{path: p.yaml}]
                """);
        write("k/p.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nope}\n");
        assertThatThrownBy(() -> Kustomize.render(dir.resolve("k"))).hasMessageContaining("matches 0");
    }

    @Test
    void imageNamesIgnoreTagsAndDigestsButNotRegistryPorts() {
        assertThat(Kustomize.imageName("ripcord/gateway:1")).isEqualTo("ripcord/gateway");
        assertThat(Kustomize.imageName("host:5000/ripcord/gateway")).isEqualTo("host:5000/ripcord/gateway");
        assertThat(Kustomize.imageName("host:5000/a@sha256:ab")).isEqualTo("host:5000/a");
    }
}
