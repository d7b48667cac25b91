package dev.ripcord.stack;

import static dev.ripcord.stack.JsonStrings.quote;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code .ripcord/stack.json}: what {@code ./ripcord up} is running, for the operator commands ({@code ./ripcord
 * status}, and the Kafka commands' default broker) to find without being told.
 *
 * <p>Written once every instance is healthy, replaced atomically (write to a temporary file, then move), and deleted
 * when that {@code ./ripcord up} stops (only if it still names that launcher's PID, so a second stack's file is not
 * removed by the first one stopping). A stack killed with SIGKILL leaves it behind; readers probe the URLs and see
 * the instances down. It holds no secret (no API key, no internal token). Format, {@code schemaVersion} 1:
 *
 * <pre>{@code
 * {"schemaVersion":1,"pid":4242,"startedAt":"2026-12-01T12:00:00Z","kafka":"localhost:9092",
 *  "logDir":"/repo/.ripcord/logs",
 *  "instances":[{"id":"gateway-1","role":"gateway","url":"http://localhost:8080",
 *                "managementUrl":"http://127.0.0.1:40123","pid":4250},...]}
 * }</pre>
 *
 * {@code url} is the service port (the API, a worker's {@code /internal}); {@code managementUrl} is where actuator
 * answers ({@code /actuator/health}, {@code /actuator/prometheus}), on the loopback interface.
 */
public final class StackStateFile {

    private static final Pattern PID = Pattern.compile("\"pid\"\\s*:\\s*(\\d+)");

    private StackStateFile() {
    }

    /** {@code <root>/.ripcord/stack.json}. */
    public static Path path(Path root) {
        return root.resolve(".ripcord").resolve("stack.json");
    }

    /** Writes {@code stack}'s state, replacing any earlier file. */
    public static void write(Path file, LocalStack stack, Path logDir) {
        write(file, json(stack, logDir, ProcessHandle.current().pid(), Instant.now()));
    }

    static String json(LocalStack stack, Path logDir, long launcherPid, Instant startedAt) {
        StringBuilder json = new StringBuilder();
        json.append("{\"schemaVersion\":1,\"pid\":").append(launcherPid)
                .append(",\"startedAt\":").append(quote(startedAt.toString()))
                .append(",\"kafka\":").append(quote(stack.bootstrapServers()))
                .append(",\"logDir\":").append(quote(logDir.toAbsolutePath().toString()))
                .append(",\"instances\":[");
        String separator = "";
        for (LocalStack.Instance instance : stack.instances()) {
            json.append(separator).append("{\"id\":").append(quote(instance.id()))
                    .append(",\"role\":").append(quote(instance.role().shortName()))
                    .append(",\"url\":").append(quote(instance.url()))
                    .append(",\"managementUrl\":").append(quote(instance.managementUrl()))
                    .append(",\"pid\":").append(instance.pid()).append('}');
            separator = ",";
        }
        return json.append("]}\n").toString();
    }

    private static void write(Path file, String content) {
        try {
            Files.createDirectories(file.getParent());
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
            Files.writeString(tmp, content, StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Deletes {@code file} if it was written by the launcher with {@code launcherPid}; never throws. */
    public static void delete(Path file, long launcherPid) {
        try {
            Matcher m = PID.matcher(Files.readString(file, StandardCharsets.UTF_8));
            if (m.find() && Long.parseLong(m.group(1)) == launcherPid) {
                Files.deleteIfExists(file);
            }
        } catch (IOException | RuntimeException e) {
            // Gone already, or unreadable: nothing of ours to remove.
        }
    }
}
