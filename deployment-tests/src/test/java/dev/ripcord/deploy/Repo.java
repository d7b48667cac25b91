package dev.ripcord.deploy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.springframework.boot.convert.DurationStyle;

/** The repository checkout this build runs in, and facts read from the services' own configuration. */
final class Repo {

    private Repo() {
    }

    static Path root() {
        String root = System.getProperty("ripcord.root");
        return (root == null ? Path.of("..") : Path.of(root)).toAbsolutePath().normalize();
    }

    static Path path(String relative) {
        return root().resolve(relative);
    }

    /** The project version the build runs (images are tagged with it). */
    static String version() {
        String version = System.getProperty("ripcord.version");
        if (version == null) {
            throw new IllegalStateException("run through Maven: surefire sets ripcord.version");
        }
        return version;
    }

    static String read(String relative) {
        try {
            return Files.readString(path(relative));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code <service>-service/src/main/resources/application.yml}, as a tree. */
    static Map<String, Object> applicationYml(String service) {
        return Yaml.document(path(service + "-service/src/main/resources/application.yml"));
    }

    /** {@code server.port} of a service, from its application.yml. */
    static int serverPort(String service) {
        return ((Number) Yaml.at(applicationYml(service), "server.port")).intValue();
    }

    /** {@code management.server.port} of a service (actuator's own port), from its application.yml. */
    static int managementPort(String service) {
        Object port = Yaml.at(applicationYml(service), "management.server.port");
        if (port == null) {
            throw new AssertionError(service + "'s application.yml sets no management.server.port");
        }
        return ((Number) port).intValue();
    }

    /** {@code spring.lifecycle.timeout-per-shutdown-phase} of a service, from its application.yml. */
    static Duration shutdownPhaseTimeout(String service) {
        Object value = Yaml.at(applicationYml(service), "spring.lifecycle.timeout-per-shutdown-phase");
        if (value == null) {
            return Duration.ofSeconds(30); // Spring Boot's default
        }
        return DurationStyle.detectAndParse(String.valueOf(value));
    }

    static Duration duration(String value) {
        return DurationStyle.detectAndParse(value);
    }
}
