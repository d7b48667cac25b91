package dev.ripcord.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

/**
 * The Kubernetes pods' {@code wait-for-kafka} init step (see {@link KubernetesManifestsTest}), its script run for
 * real: a stack test, since it starts a process.
 */
class WaitForKafkaStepIT {

    /**
     * The init step's own script, run here with bash against loopback: while nothing answers at the bootstrap
     * address it keeps waiting and says what it waits for; once a Kafka broker (the local stack's in-process KRaft
     * broker) listens there, it exits 0 and the service's start would follow.
     */
    @Test
    void theWaitForKafkaStepWaitsWhileNothingAnswersAndEndsWhenABrokerListens() throws Exception {
        List<Map<String, Object>> resources = KubernetesManifestsTest.rendered("k8s/overlays/prod");
        Map<String, Object> decode = KubernetesManifestsTest.ripcordWorkloads(resources).stream()
                .filter(w -> KubernetesManifestsTest.DECODE.equals(KubernetesManifestsTest.component(w))).findFirst().orElseThrow();
        List<String> command = KubernetesManifestsTest.waitForKafkaCommand(decode);
        int port = freeLoopbackPort();
        int dead = freeLoopbackPort();
        String servers = "127.0.0.1:" + dead + ",127.0.0.1:" + port;
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("SPRING_KAFKA_BOOTSTRAP_SERVERS", servers);
        Process step = builder.start();
        java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>();
        Thread.ofVirtual().start(() -> new java.io.BufferedReader(new java.io.InputStreamReader(step.getInputStream(),
                java.nio.charset.StandardCharsets.UTF_8)).lines().forEach(lines::add));
        try {
            // It says what it waits for, and keeps waiting: it does not give up.
            assertThat(lines.poll(60, java.util.concurrent.TimeUnit.SECONDS))
                    .isEqualTo("waiting for Kafka at " + servers + " (SPRING_KAFKA_BOOTSTRAP_SERVERS in ConfigMap "
                            + "ripcord-config): no answer yet, next try in 5 s");
            assertThat(step.isAlive()).isTrue();
            try (dev.ripcord.stack.KraftBroker broker = dev.ripcord.stack.KraftBroker.start(port)) {
                assertThat(broker.bootstrapServers()).endsWith(":" + port);
                assertThat(step.waitFor(60, java.util.concurrent.TimeUnit.SECONDS)).as("the step ended").isTrue();
                assertThat(step.exitValue()).isZero();
            }
            String last = null;
            for (String line = lines.poll(10, java.util.concurrent.TimeUnit.SECONDS); line != null;
                 line = lines.poll(1, java.util.concurrent.TimeUnit.SECONDS)) {
                last = line;
            }
            assertThat(last).isEqualTo("Kafka at " + servers + " answers: starting decode");
        } finally {
            step.destroyForcibly();
        }
    }

    private static int freeLoopbackPort() throws java.io.IOException {
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }
}
