package dev.ripcord.lifecycle.audit;

import java.time.Duration;
import java.util.Map;

import dev.ripcord.lifecycle.LifecycleEvent;
import dev.ripcord.lifecycle.LifecycleEventCodec;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/** {@link AuditReport} as JSON ({@code ripcord audit --json}); durations in milliseconds (fractional). */
public final class AuditReportJson {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private AuditReportJson() {
    }

    public static ObjectNode toJson(AuditReport r) {
        ObjectNode root = JSON.createObjectNode();
        root.put("passed", r.passed());
        root.put("from", r.from().toString());
        root.put("to", r.to().toString());
        root.put("events", r.events());
        root.put("requests", r.requests());
        counts(root.putObject("outcomes"), r.outcomes());
        root.put("inFlight", r.inFlight());
        root.put("cancels", r.cancels());
        counts(root.putObject("cancelsByReason"), r.cancelsByReason());
        counts(root.putObject("abortsByPhase"), r.abortsByPhase());
        ObjectNode latencies = root.putObject("latencies");
        r.latencies().forEach((hop, stats) -> {
            ObjectNode h = latencies.putObject(hop);
            h.put("count", stats.count());
            h.put("p50Ms", millis(stats.p50()));
            h.put("p99Ms", millis(stats.p99()));
            h.put("maxMs", millis(stats.max()));
        });
        root.put("wastedPrefillTokens", r.wastedPrefillTokens());
        root.put("tokensAfterCancel", r.tokensAfterCancel());
        violations(root.putArray("violations"), r);
        ArrayNode unverifiable = root.putArray("unverifiable");
        r.unverifiable().forEach(v -> unverifiable.add(violation(v)));
        ArrayNode losses = root.putArray("losses");
        for (EventLoss l : r.losses()) {
            ObjectNode n = losses.addObject();
            n.put("service", l.service());
            n.put("instance", l.instance());
            n.put("count", l.count());
            n.put("fromSeq", l.fromSeq());
            n.put("toSeq", l.toSeq());
            n.put("reported", l.reported());
            if (l.incarnation() != null) {
                n.put("incarnation", l.incarnation());
            }
        }
        ArrayNode errors = root.putArray("errors");
        r.errors().forEach(errors::add);
        return root;
    }

    private static void violations(ArrayNode out, AuditReport r) {
        r.violations().forEach(v -> out.add(violation(v)));
    }

    private static ObjectNode violation(Violation v) {
        ObjectNode n = JSON.createObjectNode();
        n.put("requestId", v.requestId());
        n.put("invariant", v.invariant().name());
        n.put("message", v.message());
        if (v.process() != null) {
            n.put("process", v.process());
            n.put("instance", v.instance());
        }
        ArrayNode events = n.putArray("events");
        for (LifecycleEvent e : v.events()) {
            events.add(LifecycleEventCodec.toJson(e));
        }
        return n;
    }

    private static void counts(ObjectNode out, Map<String, Long> counts) {
        counts.forEach(out::put);
    }

    private static double millis(Duration d) {
        return d.toNanos() / 1_000_000.0;
    }
}
