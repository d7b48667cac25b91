package dev.ripcord.stack.cancel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.StackStateFile;
import dev.ripcord.stack.TestStacks;

/**
 * A scrape of a service's {@code /actuator/prometheus}: every sample with its labels, and sums over the samples of a
 * metric whose labels match. Enough for counters and histogram buckets; no Prometheus client needed.
 */
public final class Prometheus {

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)})?\\s+(\\S+)");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    /** One sample line. */
    public record Sample(String name, Map<String, String> labels, double value) {
    }

    private final List<Sample> samples;

    private Prometheus(List<Sample> samples) {
        this.samples = samples;
    }

    /**
     * Scrapes {@code service}: the {@code /actuator/prometheus} of the instance whose service port is at
     * {@code service}, on its management port: the one this JVM's stack gave it ({@link LocalStack#managementUrlOf}),
     * else the one the running {@code ./ripcord up} lists for it in {@code .ripcord/stack.json}, else
     * {@code service} itself (a management URL given directly).
     */
    public static Prometheus scrape(URI service) {
        URI management = LocalStack.managementUrlOf(service).or(() -> listedByUp(service)).map(URI::create)
                .orElse(service);
        HttpRequest request = HttpRequest.newBuilder(management.resolve("/actuator/prometheus"))
                .timeout(Duration.ofSeconds(30)).GET().build();
        try {
            HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new AssertionError(management + "/actuator/prometheus answered " + response.statusCode());
            }
            return parse(response.body());
        } catch (IOException e) {
            throw new UncheckedIOException("scraping " + service + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The {@code managementUrl} that {@code ./ripcord up}'s state file gives the instance at {@code service}. */
    private static java.util.Optional<String> listedByUp(URI service) {
        java.nio.file.Path state = StackStateFile.path(TestStacks.repositoryRoot());
        try {
            String base = service.getScheme() + "://" + service.getAuthority();
            Matcher m = Pattern.compile("\"url\":\"" + Pattern.quote(base) + "\",\"managementUrl\":\"([^\"]+)\"")
                    .matcher(java.nio.file.Files.readString(state));
            return m.find() ? java.util.Optional.of(m.group(1)) : java.util.Optional.empty();
        } catch (IOException e) {
            return java.util.Optional.empty(); // no stack running here
        }
    }

    static Prometheus parse(String text) {
        List<Sample> samples = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            Matcher m = SAMPLE.matcher(line);
            if (!m.find()) {
                continue;
            }
            Map<String, String> labels = new LinkedHashMap<>();
            if (m.group(3) != null) {
                Matcher l = LABEL.matcher(m.group(3));
                while (l.find()) {
                    labels.put(l.group(1), l.group(2));
                }
            }
            samples.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(4))));
        }
        return new Prometheus(samples);
    }

    /**
     * The sum of every sample named {@code name} whose labels include {@code labels} ({@code key, value, ...});
     * 0 if there is none (a counter that never moved may not be exported yet).
     */
    public double sum(String name, String... labels) {
        double sum = 0;
        for (Sample s : samples) {
            if (s.name().equals(name) && matches(s.labels(), labels)) {
                sum += s.value();
            }
        }
        return sum;
    }

    /** Every sample named {@code name} whose labels include {@code labels}. */
    public List<Sample> samples(String name, String... labels) {
        return samples.stream().filter(s -> s.name().equals(name) && matches(s.labels(), labels)).toList();
    }

    private static boolean matches(Map<String, String> actual, String... wanted) {
        for (int i = 0; i + 1 < wanted.length; i += 2) {
            if (!wanted[i + 1].equals(actual.get(wanted[i]))) {
                return false;
            }
        }
        return true;
    }
}
