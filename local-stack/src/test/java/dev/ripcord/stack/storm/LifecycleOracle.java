package dev.ripcord.stack.storm;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import dev.ripcord.cli.RipcordCli;
import dev.ripcord.protocol.RequestIds;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The storm's oracle: {@code ripcord audit} itself (the lifecycle-log {@code Auditor} over the stack's
 * {@code ripcord.lifecycle} and {@code ripcord.cancellations} topics for the storm's window), run in this JVM, its
 * JSON report read back. One call, so that the storm checks exactly what an operator's audit checks.
 */
final class LifecycleOracle {

    /**
     * What the audit found.
     *
     * @param ran        whether an audit ran and produced a report
     * @param requests   requests it rebuilt
     * @param violations invariant violations it reported, plus its errors (a window without evidence to judge: no
 *                   events, no worker events, every request in flight); must be 0
     * @param unverifiable missing events a loss or a crash of the process that should have logged them explains
     *                     (shown, not 0 by rule: a killed process's last events, say)
     * @param summary    its summary (outcomes, cancels, aborts by phase, event losses, the first violations), or why
     *                   it did not run
     * @param unverifiableItems each unverifiable finding: the process that should have logged the missing event
     *                          and why the log excuses it
     * @param admittedByClientId requests the gateways logged as admitted, by the client's ID (the part of the internal
     *                           ID before its random part): what a client's answered request is looked up in
     */
    record Verdict(boolean ran, long requests, long violations, long unverifiable, String summary,
                   List<Unverifiable> unverifiableItems, Map<String, Long> admittedByClientId) {

        Verdict(boolean ran, long requests, long violations, long unverifiable, String summary) {
            this(ran, requests, violations, unverifiable, summary, List.of(), Map.of());
        }
    }

    /** One unverifiable finding: its request, invariant, the process ({@code instance@incarnation}) and message. */
    record Unverifiable(String requestId, String invariant, String process, String instance, String message) {
    }

    private LifecycleOracle() {
    }

    /**
     * Audits what the stack on {@code bootstrapServers} logged between {@code from} and {@code to}, saving what it
     * read to {@code dump} ({@code ./ripcord audit --dump FILE} replays it, {@code --request ID} shows a timeline).
     */
    static Verdict audit(String bootstrapServers, Instant from, Instant to, Path dump) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new RipcordCli());
        cli.setCaseInsensitiveEnumValuesAllowed(true);
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int status = cli.execute("audit", "--kafka", bootstrapServers, "--from", from.toString(), "--to",
                to.toString(), "--json", "--save", dump.toString());
        JsonNode report;
        try {
            report = JsonMapper.builder().build().readTree(out.toString());
        } catch (RuntimeException e) {
            return new Verdict(false, 0, 0, 0, "ripcord audit exited " + status + " without a JSON report: "
                    + err.toString().strip());
        }
        if (!report.has("violations")) {
            return new Verdict(false, 0, 0, 0, "ripcord audit exited " + status + ": " + out + err);
        }
        List<String> first = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        report.path("errors").forEach(e -> errors.add(e.asString()));
        for (JsonNode v : report.get("violations")) {
            if (first.size() < 5) {
                first.add(v.path("invariant").asString() + " " + v.path("requestId").asString() + ": "
                        + v.path("message").asString());
            }
        }
        String summary = ("exit %d; %d events; outcomes %s; cancels %d by reason %s; aborts by phase %s; "
                + "in flight at the end %d; unverifiable %d; event losses %s; wasted prefill tokens %d; dump %s%s%s")
                .formatted(status,
                report.path("events").asLong(), report.path("outcomes"), report.path("cancels").asLong(),
                report.path("cancelsByReason"), report.path("abortsByPhase"), report.path("inFlight").asLong(),
                report.path("unverifiable").size(), report.path("losses"), report.path("wastedPrefillTokens").asLong(), dump,
                first.isEmpty() ? "" : "; first violations: " + first, errors.isEmpty() ? "" : "; errors: " + errors);
        List<Unverifiable> unverifiable = new ArrayList<>();
        for (JsonNode u : report.path("unverifiable")) {
            unverifiable.add(new Unverifiable(u.path("requestId").asString(), u.path("invariant").asString(),
                    u.path("process").asString(null), u.path("instance").asString(null), u.path("message").asString()));
        }
        return new Verdict(true, report.path("requests").asLong(), report.get("violations").size() + errors.size(),
                report.path("unverifiable").size(), summary, unverifiable, admitted(dump));
    }

    /**
     * From the records the audit read ({@code dump}, one JSON line each): the gateways' ADMITTED events counted by
     * client ID. Empty when the dump cannot be read, which the coverage gate then reports as requests unseen.
     */
    static Map<String, Long> admitted(Path dump) {
        Map<String, Long> byClient = new TreeMap<>();
        JsonMapper json = JsonMapper.builder().build();
        try (var lines = Files.lines(dump)) {
            lines.filter(l -> l.contains("\"ADMITTED\"")).forEach(line -> {
                JsonNode record = json.readTree(line).path("record");
                String id = record.path("requestId").asString(null);
                if ("ADMITTED".equals(record.path("type").asString()) && id != null) {
                    byClient.merge(clientId(id), 1L, Long::sum);
                }
            });
        } catch (IOException | UncheckedIOException e) {
            return Map.of();
        }
        return byClient;
    }

    /** The client's ID within an internal ID ({@code clientId:random}), or the ID itself if it is not one. */
    static String clientId(String internalId) {
        int sep = internalId.length() - RequestIds.INTERNAL_RANDOM_LENGTH - 1;
        return sep > 0 && internalId.startsWith(RequestIds.INTERNAL_SEPARATOR, sep) ? internalId.substring(0, sep)
                : internalId;
    }
}
