package dev.ripcord.cli.audit;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.cancel.CancelEventCodec;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventCodec;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * A saved audit input ({@code --save}, read back with {@code --dump}): JSON lines, one record each,
 * <pre>{"kind":"lifecycle","record":{…a lifecycle event…}}
 * {"kind":"cancel","record":{…a cancel event, as on the cancellations topic…}}</pre>
 * A line that is not one of these is reported and skipped, never fatal.
 */
final class DumpFile {

  private static final JsonMapper JSON = JsonMapper.builder().build();

  private DumpFile() {}

  static void write(Path file, AuditInput input) throws IOException {
    try (BufferedWriter out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      for (LifecycleEvent e : input.events) {
        ObjectNode line = JSON.createObjectNode();
        line.put("kind", "lifecycle");
        line.set("record", LifecycleEventCodec.toJson(e));
        out.write(JSON.writeValueAsString(line));
        out.newLine();
      }
      for (CancelEvent c : input.cancels) {
        ObjectNode line = JSON.createObjectNode();
        line.put("kind", "cancel");
        line.set("record", JSON.readTree(CancelEventCodec.encode(c)));
        out.write(JSON.writeValueAsString(line));
        out.newLine();
      }
    }
  }

  static AuditInput read(Path file) throws IOException {
    AuditInput input = new AuditInput();
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      String line;
      int number = 0;
      while ((line = in.readLine()) != null) {
        number++;
        if (line.isBlank()) {
          continue;
        }
        try {
          JsonNode node = JSON.readTree(line);
          JsonNode kind = node == null ? null : node.get("kind");
          JsonNode record = node == null ? null : node.get("record");
          if (kind == null || record == null || !record.isObject()) {
            throw new IllegalArgumentException("not a dump line (needs \"kind\" and \"record\")");
          }
          switch (kind.asString()) {
            case "lifecycle" -> input.events.add(LifecycleEventCodec.fromJson(record));
            case "cancel" -> input.cancels.add(
                CancelEventCodec.decode(JSON.writeValueAsBytes(record)));
            default -> throw new IllegalArgumentException("unknown kind '" + kind.asString() + "'");
          }
        } catch (JacksonException e) {
          input.skipped.add(file.getFileName() + ":" + number + ": not JSON: " + e.getOriginalMessage());
        } catch (RuntimeException e) {
          input.skipped.add(file.getFileName() + ":" + number + ": " + e.getMessage());
        }
      }
    }
    return input;
  }
}
