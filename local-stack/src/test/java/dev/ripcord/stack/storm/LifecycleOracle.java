package dev.ripcord.stack.storm;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import dev.ripcord.cli.RipcordCli;
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
     */
    record Verdict(boolean ran, long requests, long violations, long unverifiable, String summary) {
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
        return new Verdict(true, report.path("requests").asLong(), report.get("violations").size() + errors.size(),
                report.path("unverifiable").size(), summary);
    }
}
