package dev.ripcord.deploy;

import java.util.LinkedHashMap;
import java.util.Map;

import dev.ripcord.cancel.kafka.ProvisionedTopics;

/** A topic's partitions and configs, as a deployment file declares it or as the services would create it. */
record TopicSpec(int partitions, Map<String, String> config) {

    TopicSpec {
        config = Map.copyOf(config);
    }

    /** The cancellations topic and its dead-letter topic, as the services create them (CancelTopics) with the defaults. */
    static Map<String, TopicSpec> asTheServicesCreateThem() {
        Map<String, TopicSpec> topics = new LinkedHashMap<>();
        ProvisionedTopics.withDefaults().forEach((name, spec) -> topics.put(name, new TopicSpec(spec.getKey(), spec.getValue())));
        return topics;
    }
}
