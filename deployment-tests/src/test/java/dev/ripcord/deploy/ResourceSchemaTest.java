package dev.ripcord.deploy;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The schema check catches what it is there to catch; otherwise the manifest tests would prove nothing. */
class ResourceSchemaTest {

    private static Map<String, Object> gateway() {
        return KubernetesManifestsTest.find(Kustomize.render(Repo.path("k8s/base")), "Deployment", "gateway");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> container(Map<String, Object> deployment) {
        return (Map<String, Object>) ((List<Object>) Yaml.at(deployment, "spec.template.spec.containers")).getFirst();
    }

    @Test
    void theBaseGatewayIsValid() {
        assertThat(ResourceSchema.problems(gateway())).isEmpty();
    }

    @Test
    void aMisspeltFieldIsRejected() {
        Map<String, Object> deployment = gateway();
        Map<String, Object> c = container(deployment);
        c.put("readinesProbe", c.remove("readinessProbe"));
        assertThat(ResourceSchema.problems(deployment)).singleElement().asString().contains("readinesProbe");
    }

    @Test
    void aMissingRequiredFieldIsRejected() {
        Map<String, Object> deployment = gateway();
        container(deployment).remove("name");
        assertThat(ResourceSchema.problems(deployment)).singleElement().asString().contains("name");
    }

    @Test
    void aValueOfTheWrongTypeIsRejected() {
        Map<String, Object> deployment = gateway();
        container(deployment).put("env", Map.of("name", "X")); // an object where the schema wants a list
        assertThat(ResourceSchema.problems(deployment)).isNotEmpty();
    }

    @Test
    void aKindWithoutSchemaOrAWrongApiVersionIsRejected() {
        Map<String, Object> deployment = gateway();
        deployment.put("apiVersion", "extensions/v1beta1");
        assertThat(ResourceSchema.problems(deployment)).singleElement().asString().contains("apps/v1");
        assertThat(ResourceSchema.problems(Map.of("apiVersion", "v1", "kind", "Pod"))).isNotEmpty();
    }

    @Test
    void anUnknownStrimziFieldIsRejected() {
        Map<String, Object> topic = KubernetesManifestsTest.find(Kustomize.render(Repo.path("k8s/overlays/strimzi")),
                "KafkaTopic", "ripcord-cancellations");
        assertThat(ResourceSchema.problems(topic)).isEmpty();
        Yaml.map(topic.get("spec")).put("partition", 3);
        assertThat(ResourceSchema.problems(topic)).singleElement().asString().contains("partition");
    }
}
