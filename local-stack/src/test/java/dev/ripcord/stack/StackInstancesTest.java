package dev.ripcord.stack;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** {@code ./ripcord up --gateways/--prefills/--decodes}: several instances per role, each on a port of its own. */
class StackInstancesTest {

    private static final Path ROOT = Path.of("/repo");

    @Test
    void oneInstanceOfEachRoleOnTheDefaultPortsUnlessAsked() {
        StackOptions options = StackOptions.parse(new String[0], ROOT);

        assertThat(options.ports(Role.GATEWAY)).containsExactly(8080);
        assertThat(options.ports(Role.PREFILL)).containsExactly(8081);
        assertThat(options.ports(Role.DECODE)).containsExactly(8082);
    }

    @Test
    void severalInstancesListenOnTheRolesPortPlusTenPerInstanceAndNeverCollide() {
        StackOptions options = StackOptions.parse(new String[] {"--gateways=2", "--prefills=3", "--decodes=2",
                "--gateway-port=9000"}, ROOT);

        assertThat(options.ports(Role.GATEWAY)).containsExactly(9000, 9010);
        assertThat(options.ports(Role.PREFILL)).containsExactly(8081, 8091, 8101);
        assertThat(options.ports(Role.DECODE)).containsExactly(8082, 8092);
        assertThat(options.instances(Role.PREFILL)).isEqualTo(3);
        assertThat(options.properties()).as("counts are launcher options, not Spring properties").isEmpty();
        List<Integer> all = new java.util.ArrayList<>();
        for (Role role : Role.values()) {
            all.addAll(options.ports(role));
        }
        assertThat(all).doesNotHaveDuplicates();
    }

    @Test
    void aCountMustBeBetweenOneAndSixteen() {
        assertThatIllegalArgumentException().isThrownBy(() -> StackOptions.parse(new String[] {"--gateways=0"}, ROOT))
                .withMessageContaining("--gateways");
        assertThatIllegalArgumentException().isThrownBy(() -> StackOptions.parse(new String[] {"--decodes=x"}, ROOT))
                .withMessageContaining("--decodes");
    }

    @Test
    void modelPropertiesKeepTheInstances() {
        StackOptions options = StackOptions.parse(new String[] {"--gateways=2"}, ROOT)
                .withModelProperties(java.util.Map.of("ripcord.engine.preset", "tiny"));

        assertThat(options.ports(Role.GATEWAY)).containsExactly(8080, 8090);
    }
}
