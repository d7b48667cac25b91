package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

/** {@code ./ripcord up}'s own options and the properties it passes on: a typo is an error, never a property. */
class StackOptionsTest {

    private static final Path ROOT = Path.of("/repo");

    @Test
    void aMistypedOptionIsAnErrorThatSuggestsTheOption() {
        assertThatThrownBy(() -> StackOptions.parse(new String[] {"--modle=x"}, ROOT))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown option '--modle'; did you mean '--model'?");
        assertThatThrownBy(() -> StackOptions.parse(new String[] {"--gateway-prot=9000"}, ROOT))
                .hasMessageStartingWith("unknown option '--gateway-prot'; did you mean '--gateway-port'?");
        assertThatThrownBy(() -> StackOptions.parse(new String[] {"--opne"}, ROOT))
                .hasMessageStartingWith("unknown option '--opne'; did you mean '--open'?");
    }

    @Test
    void aPropertyWithAMistypedPrefixSuggestsTheCorrectedProperty() {
        assertThatThrownBy(() -> StackOptions.parse(new String[] {"--ripcrod.engine.preset=tiny"}, ROOT))
                .hasMessageStartingWith("unknown option '--ripcrod.engine.preset'; did you mean '--ripcord.engine.preset'?");
    }

    @Test
    void anOptionFarFromEveryKnownOneIsAnErrorWithoutASuggestion() {
        assertThatThrownBy(() -> StackOptions.parse(new String[] {"--frobnicate=1"}, ROOT))
                .hasMessageStartingWith("unknown option '--frobnicate' (")
                .hasMessageNotContaining("did you mean");
        assertThatThrownBy(() -> StackOptions.parse(new String[] {"--server.port=1"}, ROOT))
                .hasMessageStartingWith("unknown option '--server.port'");
    }

    @Test
    void propertiesWithAKnownPrefixReachTheServicesAndSystemPropertiesBecomeJvmFlags() {
        StackOptions options = StackOptions.parse(new String[] {"--ripcord.prefill.max-running=2",
                "--spring.main.banner-mode=off", "--management.tracing.sampling.probability=1",
                "--logging.level.root=WARN", "-Dio.netty.leakDetection.level=paranoid"}, ROOT);

        assertThat(options.properties()).containsExactly(
                java.util.Map.entry("ripcord.prefill.max-running", "2"),
                java.util.Map.entry("spring.main.banner-mode", "off"),
                java.util.Map.entry("management.tracing.sampling.probability", "1"),
                java.util.Map.entry("logging.level.root", "WARN"));
        assertThat(options.jvmFlags()).containsExactly("-Dio.netty.leakDetection.level=paranoid");
    }

    @Test
    void theUsageListsExactlyTheOptionsTheParsersTake() {
        assertThat(StackOptions.OPTIONS).containsExactly("model", "tokenizer", "kafka", "kafka-port", "kafka-brokers", "gateway-port",
                "prefill-port", "decode-port", "gateways", "prefills", "decodes", "jvm-flag", "log-dir", "open",
                "warm-up", "verbose", "help");
        assertThat(StackOptions.PROPERTY_PREFIXES).containsExactly("ripcord", "spring", "management", "logging");
        // Every listed option is consumed by ModelChoice, StackWarmUp, StackOptions or LocalStack.main (--help,
        // --verbose): none becomes a property.
        List<String> args = new ArrayList<>();
        for (String option : StackOptions.OPTIONS) {
            switch (option) {
                case "open", "help", "verbose" -> { }
                case "log-dir", "jvm-flag", "kafka" -> args.add("--" + option + "=x");
                case "model" -> args.add("--model=tiny");
                case "gateways", "prefills", "decodes" -> args.add("--" + option + "=2");
                case "tokenizer" -> { }
                case "warm-up" -> args.add("--warm-up=2");
                case "kafka-brokers" -> args.add("--kafka-brokers=3");
                default -> args.add("--" + option + "=1234");
            }
        }
        args.add("--open");
        ModelChoice.Parsed parsed = ModelChoice.parse(args.toArray(String[]::new));
        StackWarmUp.Parsed warmUp = StackWarmUp.parse(parsed.rest());
        KafkaCluster.Parsed cluster = KafkaCluster.parse(warmUp.rest());
        StackOptions options = StackOptions.parse(cluster.rest(), ROOT);

        assertThat(warmUp.rounds()).isEqualTo(2);
        assertThat(cluster.brokers()).isEqualTo(3);
        assertThat(options.properties()).containsOnlyKeys(StackCredentials.AUTH_ENABLED);
        assertThat(options.externalKafka()).isEqualTo("x");
        assertThat(options.kafkaPort()).isEqualTo(1234);
        assertThat(options.ports().values()).containsOnly(1234);
        for (Role role : Role.values()) {
            assertThat(options.ports(role)).as("%s instances", role).containsExactly(1234, 1244);
        }
        assertThat(options.jvmFlags()).containsExactly("x");
        assertThat(options.logDir()).isEqualTo(Path.of("x"));
    }


    @Test
    void upMovesKvThroughSharedMemoryUnlessTheCommandLineSaysOtherwise() {
        StackOptions plain = StackOptions.parse(new String[0], ROOT).withDefaultProperties(StackOptions.UP_DEFAULTS);
        assertThat(plain.properties()).containsEntry("ripcord.kv.backend", "shm");

        StackOptions tcp = StackOptions.parse(new String[] {"--ripcord.kv.backend=tcp"}, ROOT)
                .withDefaultProperties(StackOptions.UP_DEFAULTS);
        assertThat(tcp.properties()).containsEntry("ripcord.kv.backend", "tcp");
        assertThat(StackOptions.USAGE).contains("ripcord.kv.backend=shm");
    }
}
