package dev.ripcord.stack.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.stack.TestCredentials;
import dev.ripcord.stack.cancel.Journal;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Where a short request's time to first token goes, hop by hop: one streaming request at a time through the gateway,
 * each asking for the gateway's marks ({@code X-Ripcord-Timing}, an SSE comment before {@code [DONE]}), lined up with
 * the workers' journal entries ({@code JournalEntry.atMicros}) and the client's own send and receive times. All are
 * wall-clock microseconds of one host, so differences across processes are good to a few microseconds.
 *
 * <p>The hops, in the order a request takes them:
 * <pre>
 *  client.sent ─► gateway.received ─► gateway.parsed ─► gateway.accepted ─► decode.sent ─► D:RESERVED
 *  ─► decode.reserved ─► prefill.sent ─► P:QUEUED ─► P:STARTED ─► P:CHUNK (engine prefill) ─► D:KV_LANDED
 *  ─► decode.token.first ─► gateway.sse.first ─► client.first            (P: prefill journal, D: decode journal)
 * </pre>
 * and for the token stream: tokens per second between the first and the last token as the gateway received them from
 * decode, and as the client received them from the gateway.
 *
 * <p>Not a test: it prints medians and 90th percentiles over the requests, and asserts only that each request
 * produced every mark (a missing one is a bench bug, or a stack without the marks).
 */
final class HopBreakdown {

    /** The hops of the time to first token: from, to, what it is. Marks prefixed P:/D: are journal entries. */
    static final List<String[]> TTFT_HOPS = List.of(
            new String[] {"client.sent", "gateway.received", "client -> gateway (request in)"},
            new String[] {"gateway.received", "gateway.parsed", "gateway: parse + tokenize"},
            new String[] {"gateway.parsed", "gateway.accepted", "gateway: admit (context, limits)"},
            new String[] {"gateway.accepted", "decode.sent", "gateway: route decode"},
            new String[] {"decode.sent", "D:RESERVED", "decode call + admit + reserve"},
            new String[] {"D:RESERVED", "decode.reserved", "RESERVED -> gateway"},
            new String[] {"decode.reserved", "prefill.sent", "gateway: route prefill"},
            new String[] {"prefill.sent", "P:QUEUED", "prefill call + admit + connect KV"},
            new String[] {"P:QUEUED", "P:STARTED", "prefill queue wait (loop wake-up)"},
            new String[] {"P:STARTED", "P:CHUNK", "engine prefill (all chunks)"},
            new String[] {"P:CHUNK", "D:KV_LANDED", "sample + KV transfer + done -> decode adopt"},
            new String[] {"D:KV_LANDED", "decode.token.first", "first token decode -> gateway"},
            new String[] {"decode.token.first", "gateway.sse.first", "gateway: detokenize + SSE shape"},
            new String[] {"gateway.sse.first", "client.first", "SSE write -> client"});

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final URI gateway;
    private final URI prefill;
    private final URI decode;
    private final String model;
    private final int[] prompt;
    private final int maxTokens;
    private final String apiKey;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    HopBreakdown(URI gateway, URI prefill, URI decode, String model, int[] prompt, int maxTokens) {
        this.gateway = gateway;
        this.prefill = prefill;
        this.decode = decode;
        this.model = model;
        this.prompt = prompt;
        this.maxTokens = maxTokens;
        this.apiKey = TestCredentials.apiKey(gateway);
    }

    /** One request's marks (microseconds since the epoch) and how many tokens the client received. */
    record Trace(String requestId, Map<String, Long> marks, int tokens) {

        long hop(String from, String to) {
            Long a = marks.get(from);
            Long b = marks.get(to);
            if (a == null || b == null) {
                throw new IllegalStateException("request " + requestId + " has no mark " + (a == null ? from : to)
                        + "; marks: " + marks);
            }
            return b - a;
        }
    }

    /** Runs {@code requests} requests one after another and prints the breakdown. */
    List<Trace> run(int requests, PrintStream out) {
        long prefillMark = Journal.mark(prefill);
        long decodeMark = Journal.mark(decode);
        List<Trace> traces = new ArrayList<>();
        List<Map<String, Long>> clientMarks = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < requests; i++) {
            String id = "bench-hops-" + UUID.randomUUID();
            ids.add(id);
            clientMarks.add(one(id));
        }
        Journal prefillJournal = Journal.since(prefill, prefillMark);
        Journal decodeJournal = Journal.since(decode, decodeMark);
        for (int i = 0; i < requests; i++) {
            Map<String, Long> marks = new HashMap<>(clientMarks.get(i));
            addJournal(marks, "P:", prefillJournal.of(ids.get(i)));
            addJournal(marks, "D:", decodeJournal.of(ids.get(i)));
            traces.add(new Trace(ids.get(i), marks, Math.toIntExact(marks.remove("client.tokens"))));
        }
        print(traces, out);
        return traces;
    }

    private static void addJournal(Map<String, Long> marks, String prefix, List<JournalEntry> entries) {
        for (JournalEntry e : entries) {
            marks.putIfAbsent(prefix + e.event(), e.atMicros()); // the first CHUNK: prompts here fit one chunk
        }
    }

    /** One streaming request; the client's marks, the gateway's, and {@code client.tokens}. */
    private Map<String, Long> one(String requestId) {
        ObjectNode body = JSON.createObjectNode();
        body.put("model", model);
        var ids = body.putArray("prompt");
        for (int token : prompt) {
            ids.add(token);
        }
        body.put("max_tokens", maxTokens);
        body.put("temperature", 0);
        body.put("ignore_eos", true);
        body.put("stream", true);
        HttpRequest request = TestCredentials.withApiKey(HttpRequest.newBuilder(gateway.resolve("/v1/completions")),
                        apiKey)
                .timeout(Duration.ofMinutes(2))
                .header("Content-Type", "application/json")
                .header("X-Request-Id", requestId)
                .header("X-Ripcord-Timing", "1")
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body)))
                .build();
        Map<String, Long> marks = new LinkedHashMap<>();
        marks.put("client.sent", micros());
        long tokens = 0;
        try {
            HttpResponse<Stream<String>> response = http.send(request, HttpResponse.BodyHandlers.ofLines());
            try (Stream<String> lines = response.body()) {
                if (response.statusCode() != 200) {
                    throw new IllegalStateException("gateway answered " + response.statusCode() + ": "
                            + String.join("\n", lines.toList()));
                }
                for (Iterator<String> it = lines.iterator(); it.hasNext(); ) {
                    String line = it.next();
                    long at = micros();
                    if (line.startsWith("data: ") && !line.equals("data: [DONE]")) {
                        marks.putIfAbsent("client.first", at);
                        marks.put("client.last", at);
                        tokens++;
                    } else if (line.startsWith(": ripcord-timing ")) {
                        JsonNode gatewayMarks = JSON.readTree(line.substring(": ripcord-timing ".length()));
                        for (var field : gatewayMarks.properties()) {
                            marks.put(field.getKey(), field.getValue().asLong());
                        }
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("POST /v1/completions failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        marks.put("client.tokens", tokens);
        return marks;
    }

    static void print(List<Trace> traces, PrintStream out) {
        out.printf("%nTTFT breakdown, %d requests one at a time (ms; P: prefill journal, D: decode journal)%n",
                traces.size());
        out.printf("  %-46s %8s %8s %8s%n", "hop", "median", "p90", "mean");
        for (String[] hop : TTFT_HOPS) {
            row(out, hop[2] + " [" + hop[0] + " -> " + hop[1] + "]", traces, t -> t.hop(hop[0], hop[1]));
        }
        row(out, "TTFT at the client", traces, t -> t.hop("client.sent", "client.first"));
        row(out, "  of which engine prefill", traces, t -> t.hop("P:STARTED", "P:CHUNK"));
        row(out, "  stack overhead (TTFT - engine prefill)", traces,
                t -> t.hop("client.sent", "client.first") - t.hop("P:STARTED", "P:CHUNK"));
        out.printf("%n  token stream (tokens/s between the first and the last token)%n");
        rate(out, "  decode -> gateway", traces, t -> t.hop("decode.token.first", "decode.token.last"));
        rate(out, "  gateway -> client", traces, t -> t.hop("client.first", "client.last"));
    }

    private static void row(PrintStream out, String label, List<Trace> traces,
                            java.util.function.ToLongFunction<Trace> micros) {
        long[] values = traces.stream().mapToLong(micros).sorted().toArray();
        out.printf("  %-46s %8.2f %8.2f %8.2f%n", label.length() > 46 ? label.substring(0, 46) : label,
                percentile(values, 50) / 1e3, percentile(values, 90) / 1e3,
                Arrays.stream(values).average().orElse(0) / 1e3);
    }

    private static void rate(PrintStream out, String label, List<Trace> traces,
                             java.util.function.ToLongFunction<Trace> micros) {
        double[] rates = traces.stream().filter(t -> t.tokens() > 1)
                .mapToDouble(t -> (t.tokens() - 1) / (micros.applyAsLong(t) / 1e6)).sorted().toArray();
        if (rates.length == 0) {
            return;
        }
        out.printf("  %-46s %8.1f tok/s median (p10 %.1f)%n", label, rates[rates.length / 2],
                rates[(int) (rates.length * 0.1)]);
    }

    static long percentile(long[] sorted, int p) {
        if (sorted.length == 0) {
            return 0;
        }
        int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
    }

    private static long micros() {
        return JournalEntry.nowMicros();
    }
}
