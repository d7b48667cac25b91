package dev.ripcord.stack.docs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Set;

import org.junit.jupiter.api.Test;

/**
 * docs/metrics.md lists every {@code ripcord.*} meter the services register, and nothing else: a meter added in code
 * without a line there, or a line left behind after a meter was renamed, fails here. Meters are found in the main
 * sources of every module as the literal first argument of a Micrometer builder or registry shortcut
 * ({@code Counter.builder("ripcord...")}, {@code meters.counter("ripcord...")}, ...).
 */
class MetricsDocumentationTest {

    private final Path root = RepositoryFiles.root();

    @Test
    void everyMeterInTheSourceIsDocumented() {
        Set<String> inSource = RepositoryFiles.metersInSource(root);
        assertThat(inSource).as("the scan finds the meters at all").contains("ripcord.cancellations",
                "ripcord.time.to.first.token", "ripcord.kv.sessions", "ripcord.num.requests.waiting");
        assertThat(RepositoryFiles.documentedMeters(root)).as("meters in docs/metrics.md").containsAll(inSource);
    }

    @Test
    void everyDocumentedMeterExistsInTheSource() {
        assertThat(RepositoryFiles.metersInSource(root)).as("meters registered in the source")
                .containsAll(RepositoryFiles.documentedMeters(root));
    }

    @Test
    void everyDocumentedMeterHasItsPrometheusName() {
        Set<String> series = RepositoryFiles.documentedSeries(root);
        assertThat(RepositoryFiles.documentedMeters(root)).allSatisfy(meter -> assertThat(series)
                .as("Prometheus name of %s", meter)
                .anyMatch(name -> name.startsWith(meter.replace('.', '_').replace('-', '_'))));
    }
}
