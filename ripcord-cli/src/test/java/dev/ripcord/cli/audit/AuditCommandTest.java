package dev.ripcord.cli.audit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.cli.RipcordCli;
import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventCodec;
import dev.ripcord.lifecycle.LifecycleEventType;
import dev.ripcord.lifecycle.LifecycleOutcome;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AuditCommandTest {

  @TempDir Path dir;

  /** A dump being written: lines in the --save format, per-instance sequence numbers, 1 ms per event. */
  private final List<String> lines = new ArrayList<>();
  private final Map<String, Long> seqs = new HashMap<>();
  private Instant now = Instant.parse("2026-12-01T12:00:00Z");

  private void event(String service, String instance, LifecycleEvent draft) {
    now = now.plusMillis(1);
    long seq = seqs.merge(instance, 1L, Long::sum);
    lines.add("{\"kind\":\"lifecycle\",\"record\":"
        + new String(LifecycleEventCodec.encode(draft.stamped(service, instance, seq, now)), StandardCharsets.UTF_8)
        + "}");
  }

  private void gateway(LifecycleEventType type, String id, LifecycleOutcome outcome) {
    LifecycleEvent e = LifecycleEvent.of(type, id);
    event("gateway", "g1", outcome == null ? e : e.withOutcome(outcome));
  }

  private void prefill(LifecycleEvent draft) {
    event("prefill", "p1", draft);
  }

  private void decode(LifecycleEvent draft) {
    event("decode", "d1", draft);
  }

  private void cancel(String id) {
    lines.add("{\"kind\":\"cancel\",\"record\":{\"schemaVersion\":1,\"requestId\":\"" + id
        + "\",\"reason\":\"CLIENT_DISCONNECT\",\"origin\":{\"service\":\"gateway\",\"instance\":\"g1\"},"
        + "\"timestamp\":\"" + now + "\"}}");
  }

  private void served(String id) {
    gateway(LifecycleEventType.ADMITTED, id, null);
    decode(LifecycleEvent.of(LifecycleEventType.JOB_ADMITTED, id).withPages(2));
    decode(LifecycleEvent.of(LifecycleEventType.KV_OPENED, id));
    prefill(LifecycleEvent.of(LifecycleEventType.QUEUED, id));
    prefill(LifecycleEvent.of(LifecycleEventType.KV_OPENED, id));
    prefill(LifecycleEvent.of(LifecycleEventType.STARTED, id).withTokens(64));
    prefill(LifecycleEvent.of(LifecycleEventType.CHUNK_DONE, id).withChunk(0).withTokens(64));
    prefill(LifecycleEvent.of(LifecycleEventType.KV_DRAINED, id));
    prefill(LifecycleEvent.of(LifecycleEventType.KV_RELEASED, id).withBytes(512));
    prefill(LifecycleEvent.of(LifecycleEventType.JOB_FINISHED, id).withOutcome(LifecycleOutcome.COMPLETED));
    prefill(LifecycleEvent.of(LifecycleEventType.PAGES_FREED, id));
    decode(LifecycleEvent.of(LifecycleEventType.KV_DRAINED, id));
    decode(LifecycleEvent.of(LifecycleEventType.KV_RELEASED, id).withBytes(512));
    decode(LifecycleEvent.of(LifecycleEventType.KV_LANDED, id));
    decode(LifecycleEvent.of(LifecycleEventType.JOB_FINISHED, id).withOutcome(LifecycleOutcome.COMPLETED));
    decode(LifecycleEvent.of(LifecycleEventType.PAGES_FREED, id));
    gateway(LifecycleEventType.FINISHED, id, LifecycleOutcome.COMPLETED);
  }

  private void cancelledInQueue(String id) {
    gateway(LifecycleEventType.ADMITTED, id, null);
    cancel(id);
    prefill(LifecycleEvent.of(LifecycleEventType.QUEUED, id));
    prefill(LifecycleEvent.of(LifecycleEventType.CANCEL_OBSERVED, id)
        .withCancel(CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA));
    prefill(LifecycleEvent.of(LifecycleEventType.ABORTED, id)
        .withCancel(CancelReason.CLIENT_DISCONNECT, CancelSource.KAFKA).withDetail("queued"));
    gateway(LifecycleEventType.FINISHED, id, LifecycleOutcome.CANCELLED);
  }

  private Path dump() throws IOException {
    Path file = dir.resolve("audit.jsonl");
    Files.write(file, lines, StandardCharsets.UTF_8);
    return file;
  }

  private record Run(int exit, String out, String err) {}

  private static Run run(String... args) {
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
    try {
      int exit = RipcordCli.run(args);
      return new Run(exit, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    } finally {
      System.setOut(out);
      System.setErr(err);
    }
  }

  @Test
  void aCleanLogExitsZeroAndCountsRequestsAndCancels() throws IOException {
    served("req-a");
    cancelledInQueue("req-b");

    Run run = run("audit", "--dump", dump().toString(), "--in-flight-grace", "0s");

    assertThat(run.exit()).as(run.out() + run.err()).isZero();
    assertThat(run.out()).contains("2 requests {CANCELLED=1, COMPLETED=1}")
        .contains("cancels: 1 {CLIENT_DISCONNECT=1}").contains("prefill:queued=1")
        .contains("OK: every invariant held");
  }

  @Test
  void aPlantedDoubleAbortChunkAfterCancelAndNeverReleasedSessionAreNamedAndExitNonZero() throws IOException {
    served("req-fine");
    // double abort
    cancelledInQueue("req-double-abort");
    prefill(LifecycleEvent.of(LifecycleEventType.ABORTED, "req-double-abort").withDetail("queued"));
    // a chunk started after the cancel was observed
    gateway(LifecycleEventType.ADMITTED, "req-chunk-after-cancel", null);
    prefill(LifecycleEvent.of(LifecycleEventType.STARTED, "req-chunk-after-cancel").withTokens(192));
    prefill(LifecycleEvent.of(LifecycleEventType.CANCEL_OBSERVED, "req-chunk-after-cancel"));
    prefill(LifecycleEvent.of(LifecycleEventType.CHUNK_DONE, "req-chunk-after-cancel").withChunk(0).withTokens(64));
    prefill(LifecycleEvent.of(LifecycleEventType.CHUNK_DONE, "req-chunk-after-cancel").withChunk(1).withTokens(64));
    prefill(LifecycleEvent.of(LifecycleEventType.ABORTED, "req-chunk-after-cancel").withDetail("prefill"));
    prefill(LifecycleEvent.of(LifecycleEventType.PAGES_FREED, "req-chunk-after-cancel"));
    gateway(LifecycleEventType.FINISHED, "req-chunk-after-cancel", LifecycleOutcome.CANCELLED);
    // a KV session never released
    gateway(LifecycleEventType.ADMITTED, "req-leaked-session", null);
    decode(LifecycleEvent.of(LifecycleEventType.KV_OPENED, "req-leaked-session"));
    gateway(LifecycleEventType.FINISHED, "req-leaked-session", LifecycleOutcome.FAILED);

    Run run = run("audit", "--dump", dump().toString(), "--in-flight-grace", "0s");

    assertThat(run.exit()).isEqualTo(1);
    assertThat(run.out())
        .contains("VIOLATION AT_MOST_ONE_ABORT requestId=req-double-abort")
        .contains("VIOLATION NO_CHUNK_AFTER_CANCEL requestId=req-chunk-after-cancel")
        .contains("VIOLATION KV_SESSION_RELEASED_ONCE requestId=req-leaked-session")
        .contains("FAILED: 3 violation(s)")
        .doesNotContain("requestId=req-fine:");
    // the events that break it are printed under each violation
    assertThat(run.out()).contains("CHUNK_DONE requestId=req-chunk-after-cancel chunk=1");

    Run asJson = run("audit", "--dump", dir.resolve("audit.jsonl").toString(), "--in-flight-grace", "0s", "--json");
    assertThat(asJson.exit()).isEqualTo(1);
    assertThat(asJson.out()).contains("\"passed\" : false").contains("\"invariant\" : \"AT_MOST_ONE_ABORT\"");
  }

  @Test
  void aCorruptOrForeignRecordIsReportedAndSkippedNotFatal() throws IOException {
    served("req-a");
    lines.add("this is not json");
    lines.add("{\"kind\":\"lifecycle\",\"record\":{\"schemaVersion\":1,\"type\":\"TELEPORTED\"}}");
    lines.add("{\"something\":\"else\"}");

    Run run = run("audit", "--dump", dump().toString(), "--in-flight-grace", "0s");

    assertThat(run.exit()).as(run.out()).isZero();
    assertThat(run.out()).contains("skipped 3 unreadable record(s)").contains("unknown type 'TELEPORTED'")
        .contains("audit.jsonl:18: not JSON");
  }

  @Test
  void requestPrintsOneTimeline() throws IOException {
    served("req-a");
    cancelledInQueue("req-b");

    Run run = run("audit", "--dump", dump().toString(), "--request", "req-b");

    assertThat(run.exit()).isZero();
    assertThat(run.out()).contains("requestId=req-b: 5 lifecycle event(s), 1 cancel event(s)")
        .contains("cancel published by gateway/g1: CLIENT_DISCONNECT").contains("ABORTED requestId=req-b")
        .doesNotContain("requestId=req-a");
  }

  @Test
  void saveWritesADumpThatAuditsTheSame() throws IOException {
    served("req-a");
    cancelledInQueue("req-b");
    Path copy = dir.resolve("copy.jsonl");

    Run first = run("audit", "--dump", dump().toString(), "--save", copy.toString(), "--in-flight-grace", "0s");
    Run second = run("audit", "--dump", copy.toString(), "--in-flight-grace", "0s");

    assertThat(second.exit()).isEqualTo(first.exit()).isZero();
    assertThat(second.out()).isEqualTo(first.out());
  }

  @Test
  void badOptionsAreUsageErrors() {
    assertThat(run("audit", "--since", "soon").exit()).isEqualTo(2);
    assertThat(run("audit", "--since", "1h", "--from", "2026-12-01T00:00:00Z").exit()).isEqualTo(2);
    assertThat(run("audit", "--from", "yesterday").exit()).isEqualTo(2);
    assertThat(run("audit", "--dump", dir.resolve("absent.jsonl").toString()).exit()).isEqualTo(2);
  }

  @Test
  void anUnreachableBrokerIsReportedNotAViolation() {
    Run run = run("audit", "--since", "10m", "--kafka", "localhost:1", "--timeout", "2s");
    assertThat(run.exit()).isEqualTo(2);
    assertThat(run.err()).contains("cannot read the topics from localhost:1");
  }
}
