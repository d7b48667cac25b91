package dev.ripcord.stack;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@code ./ripcord up --kafka-brokers=N}: how many nodes the embedded Kafka cluster has (default 1), and what the
 * services are told so that their topics use them.
 *
 * <p>With three nodes or more the services create the cancellations topic, its dead-letter topic and the lifecycle
 * topic with replication factor 3; the topics' {@code min.insync.replicas} is then 2 (a majority, set by the
 * services when they create them) and the producers write with {@code acks=all}, idempotent (the services'
 * defaults): one broker may die with nothing it acknowledged lost and every publish still accepted.
 */
public final class KafkaCluster {

    /** The most nodes {@code --kafka-brokers} accepts: a laptop's cluster, not a data centre's. */
    static final int MAX_BROKERS = 5;

    private KafkaCluster() {
    }

    /**
     * {@code --kafka-brokers} read off {@code args}.
     *
     * @param brokers how many nodes (1 unless given)
     * @param rest    every other argument, in order
     */
    public record Parsed(int brokers, String[] rest) {
    }

    public static Parsed parse(String[] args) {
        int brokers = 1;
        List<String> rest = new ArrayList<>();
        for (String arg : args) {
            if (arg.startsWith("--kafka-brokers=")) {
                String value = arg.substring("--kafka-brokers=".length());
                try {
                    brokers = Integer.parseInt(value);
                } catch (NumberFormatException e) {
                    brokers = -1;
                }
                if (brokers < 1 || brokers > MAX_BROKERS) {
                    throw new IllegalArgumentException("--kafka-brokers must be a number of brokers (1-" + MAX_BROKERS
                            + "), got '" + value + "'");
                }
            } else {
                rest.add(arg);
            }
        }
        return new Parsed(brokers, rest.toArray(String[]::new));
    }

    /**
     * The properties every service gets on a cluster of {@code brokers} nodes unless the command line gives them:
     * replication factor 3 for the three topics from three nodes up (the nodes' count below that); none for one.
     */
    public static Map<String, String> serviceProperties(int brokers) {
        Map<String, String> properties = new LinkedHashMap<>();
        if (brokers > 1) {
            String replicas = String.valueOf(Math.min(brokers, 3));
            properties.put("ripcord.cancel.replication-factor", replicas);
            properties.put("ripcord.lifecycle.replication-factor", replicas);
        }
        return properties;
    }
}
