package dev.ripcord.stack.bench;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.LocalStack;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestCredentials;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.Endpoints;
import dev.ripcord.stack.cancel.Journal;
import dev.ripcord.stack.cancel.Prometheus;
import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import dev.ripcord.stack.cancel.Texts;
import tools.jackson.databind.json.JsonMapper;

/**
 * The bug report's scenario as figures: N times, a long streaming prompt whose client disconnects one second in
 * (before any output), then at once a short request. Per propagation mode it prints the short request's time to
 * first token against the same request on an idle stack, how long the prefill worker took from the disconnect to
 * stopping the prompt, and how many prefill chunks were computed for a client that was already gone.
 *
 * <p>How each figure is taken:
 * <ul>
 *   <li><b>TTFT</b>: client side, request sent → first piece of text (streaming, greedy). Idle: the same short
 *       request with nothing else running, median of several.</li>
 *   <li><b>disconnect → abort</b>: from the client closing the connection (its clock carried over to the host's
 *       wall clock) to the prefill journal's {@code STOPPED} for the prompt (the entry's own wall-clock stamp,
 *       {@code atMicros}; one host, so one clock). Before the journal had stamps a poller read it every 2 ms, which
 *       added up to a poll and an HTTP round trip and took CPU from the engine it measured ({@code --poll-ms}
 *       brings it back for comparison). The <b>hops</b> line splits this leg: disconnect → decode's and prefill's
 *       {@code CANCEL_OBSERVED} → prefill's {@code STOPPED}. <b>Overrun</b> is that minus the duration of the chunk that was in flight at the
 *       disconnect (last chunk seen before it → first chunk seen after it): the target "abort within one chunk +
 *       25 ms" is an overrun of at most 25 ms. The workers' own {@code ripcord_cancel_abort_latency_seconds}
 *       histogram (cancel <em>observed</em> → stopped) is printed beside it.</li>
 *   <li><b>chunk time</b>: intervals between consecutive {@code CHUNK} entries of the long prompts (their stamps),
 *       median: the contract's unit ("stopped within one chunk").</li>
 *   <li><b>chunks wasted</b>: {@code CHUNK} entries of the long prompt after the journal position read at the
 *       disconnect: work done for a client that was gone. The chunk in flight at the disconnect counts.</li>
 *   <li><b>layers after cancel</b> (mean, p99): prefill work done after the worker observed the cancel, in
 *       layer-chunks, from the journal alone: the forward's position when the cancel was observed
 *       ({@code CANCEL_OBSERVED … chunk=C layer=B/L}, or the chunks completed so far when no chunk was computing)
 *       to where it stopped ({@code STOPPED … chunk=C layer=M/L} at a boundary inside a chunk, counted as M + 1 when
 *       it says {@code inside} (layer M abandoned part way), or after the chunks completed when it stopped between
 *       two), each chunk counting L layers. Integer boundaries: an upper bound on the work.</li>
 *   <li><b>KV transfer</b>: prefill's send bursts (the pages one chunk finished, handed to the transfer session →
 *       all acknowledged by decode; {@code ripcord.prefill.kv.send.*}) over the measured iterations, bytes over burst
 *       time, beside a {@code memcpy} and a loopback TCP send of a burst of the same size sampled on this machine
 *       between the same iterations (while the stack is idle).</li>
 * </ul>
 * Targets with {@code both}: TTFT ratio ≤ 1.2; disconnect → abort p99 ≤ one chunk time + 25 ms; layers after
 * cancel ≤ 1 on average (the chunk in progress stops at the next safe point, at the latest the next layer boundary); KV transfer ≥ 70 % of
 * memcpy on shm, of loopback TCP on tcp.
 *
 * <p>Not a test: it asserts nothing, it prints figures. Against a running stack (one mode, whatever it runs):
 * <pre>
 *   ./ripcord up --ripcord.prefill.max-running=1
 *   PrefillCancelBench --gateway=http://localhost:8080 --prefill=http://localhost:8081 --decode=http://localhost:8082
 * </pre>
 * or starting one stack per mode, one after the other, on free ports:
 * <pre>
 *   PrefillCancelBench --start-stacks [--modes=both,in-band,kafka,none] [--stack-property=k=v ...]
 * </pre>
 */
public final class PrefillCancelBench {

    static final String USAGE = BenchUsage.read(PrefillCancelBench.class);

    private static final Duration IDLE_POLL = Duration.ofMillis(20);
    private static final String BURST_BYTES = "ripcord_prefill_kv_send_bytes";
    private static final String BURST_TIME = "ripcord_prefill_kv_send_time_seconds";

    private final Endpoints stack;
    private final StreamingClient client;
    private final int n;
    private final int promptTokens;
    private final long cancelAfterMillis;
    private final int shortBytes;
    private final int idleSamples;
    private final long pollMillis;
    private String transferLine = "";

    PrefillCancelBench(Endpoints stack, int n, int promptTokens, long cancelAfterMillis, int shortBytes,
                       int idleSamples, long pollMillis) {
        this.pollMillis = pollMillis;
        this.stack = stack;
        this.client = new StreamingClient(stack.gateway());
        this.n = n;
        this.promptTokens = promptTokens;
        this.cancelAfterMillis = cancelAfterMillis;
        this.shortBytes = shortBytes;
        this.idleSamples = idleSamples;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        Map<String, String> stackProperties = new LinkedHashMap<>();
        for (String arg : args) {
            if (arg.equals("--start-stacks")) {
                options.put("start-stacks", "true");
                continue;
            }
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                System.err.println(USAGE);
                System.exit(2);
            }
            String key = arg.substring(2, eq);
            if (key.equals("stack-property")) {
                String kv = arg.substring(eq + 1);
                stackProperties.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
            } else {
                options.put(key, arg.substring(eq + 1));
            }
        }
        int n = Integer.parseInt(options.getOrDefault("n", "10"));
        int promptTokens = Integer.parseInt(options.getOrDefault("prompt-tokens", "8192"));
        long cancelAfter = Long.parseLong(options.getOrDefault("cancel-after-ms", "1000"));
        int shortBytes = Integer.parseInt(options.getOrDefault("short-bytes", "32"));
        int idleSamples = Integer.parseInt(options.getOrDefault("idle-samples", "5"));
        long pollMillis = Long.parseLong(options.getOrDefault("poll-ms", "0"));
        PrintStream out = System.out;
        List<String> report = new ArrayList<>();
        List<String> transfers = new ArrayList<>();

        if (options.containsKey("start-stacks")) {
            for (String mode : options.getOrDefault("modes", "both,in-band,kafka,none").split(",")) {
                Map<String, String> properties = new LinkedHashMap<>();
                properties.put("ripcord.engine.preset", "small");
                properties.put("ripcord.engine.threads", "1");
                properties.put("ripcord.prefill.max-running", "1");
                properties.putAll(stackProperties);
                properties.put("ripcord.cancel.propagation", mode);
                Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/bench-logs/prefill-cancel-"
                        + mode);
                out.printf("%n== %s: starting a stack %s (logs in %s)%n", mode, properties, logDir);
                try (LocalStack started = LocalStack.start(TestStacks.options(properties, logDir), null)) {
                    // Ctrl-C must not leave the service JVMs behind (close() is idempotent).
                    Runtime.getRuntime().addShutdownHook(new Thread(started::close, "bench-stack-" + mode));
                    Endpoints endpoints = new Endpoints(URI.create(started.url(Role.GATEWAY)),
                            URI.create(started.url(Role.PREFILL)), URI.create(started.url(Role.DECODE)),
                            servedModel(URI.create(started.url(Role.GATEWAY))));
                    PrefillCancelBench bench = new PrefillCancelBench(endpoints, n, promptTokens, cancelAfter,
                            shortBytes, idleSamples, pollMillis);
                    report.add(bench.run(mode, out));
                    transfers.add(bench.transferLine);
                }
            }
        } else {
            URI gateway = URI.create(options.getOrDefault("gateway", "http://localhost:8080"));
            Endpoints endpoints = new Endpoints(gateway,
                    URI.create(options.getOrDefault("prefill", "http://localhost:8081")),
                    URI.create(options.getOrDefault("decode", "http://localhost:8082")), servedModel(gateway));
            PrefillCancelBench bench = new PrefillCancelBench(endpoints, n, promptTokens, cancelAfter, shortBytes,
                    idleSamples, pollMillis);
            report.add(bench.run("running stack", out));
            transfers.add(bench.transferLine);
        }
        out.printf("%n%-14s %10s %12s %12s %7s %11s %11s %10s %12s %10s %9s %12s %11s%n", "mode", "idle TTFT",
                "TTFT p50", "TTFT p99", "ratio", "abort p50", "abort p99", "chunk p50", "overrun p99",
                "obs→stop", "wasted", "layers mean", "layers p99");
        report.forEach(out::println);
        out.println("(ms. TTFT: short request sent at the disconnect; ratio = TTFT p50 / idle TTFT (target ≤ 1.2 with "
                + "both); abort: disconnect → the journal's STOPPED stamp; overrun: abort − duration of the chunk "
                + "in flight at the disconnect (target: abort ≤ one chunk + 25 ms, i.e. overrun ≤ 25); obs→stop: workers' histogram "
                + "p99 bucket; wasted: chunks computed after the disconnect, mean per long prompt; layers: prefill "
                + "work after the worker observed the cancel, in layer-chunks, from the journal's CANCEL_OBSERVED and "
                + "STOPPED positions, mean and p99 over the prompts stopped mid-prefill)");
        out.println();
        transfers.forEach(out::println);
        out.println("(KV transfer: prefill's send bursts, Δ ripcord_prefill_kv_send_bytes_sum / Δ "
                + "ripcord_prefill_kv_send_time_seconds_sum; target ≥ 70 % of memcpy on shm, of loopback TCP on tcp)");
        System.exit(0);
    }

    /** Runs the scenario N times against this stack and returns one report line. */
    String run(String mode, PrintStream out) throws Exception {
        int promptBytes = promptTokens - 1;
        out.printf("%s: warming up (one long prompt cancelled, %d short requests)%n", mode, idleSamples);
        iteration("warmup", promptBytes, false);
        List<Double> idle = new ArrayList<>();
        for (int i = 0; i < idleSamples + 2; i++) {
            double ttft = ttftMillis(shortRequest("bench-idle-" + i));
            if (i >= 2) {
                idle.add(ttft);
            }
        }
        double idleTtft = percentile(idle, 50);
        out.printf("%s: idle TTFT of the short request %s ms (p50 of %s)%n", mode, fmt(idleTtft), idle);

        Prometheus histogramBefore = Prometheus.scrape(stack.prefill());
        // The warm-up's bursts say how big one is; the limits are sampled at that size between iterations.
        double warmBursts = histogramBefore.sum(BURST_BYTES + "_count");
        CopyLimits limits = new CopyLimits(warmBursts > 0
                ? (long) (histogramBefore.sum(BURST_BYTES + "_sum") / warmBursts) : 1 << 20);
        List<Double> ttfts = new ArrayList<>();
        List<Double> aborts = new ArrayList<>();
        List<Double> chunkTimes = new ArrayList<>();
        List<Double> overruns = new ArrayList<>();
        List<Double> layersAfter = new ArrayList<>();
        List<Hops> hops = new ArrayList<>();
        List<Hops> polledHops = new ArrayList<>();
        long wasted = 0;
        for (int i = 0; i < n; i++) {
            boolean polled = pollMillis > 0 && i % 2 == 1;
            Iteration it = iteration("bench-" + i, promptBytes, polled);
            ttfts.add(it.shortTtftMillis());
            if (it.abortMillis() >= 0) {
                aborts.add(it.abortMillis());
                overruns.add(it.overrunMillis());
            }
            chunkTimes.addAll(it.chunkMillis());
            wasted += it.wastedChunks();
            if (it.layersAfterCancel() >= 0) {
                layersAfter.add((double) it.layersAfterCancel());
            }
            limits.sample(); // the stack is idle here (iteration() waits for it)
            out.printf("%s #%d: short TTFT %s ms, disconnect→abort %s (chunk in flight %s ms), chunks wasted %d, "
                            + "layers after the cancel %s (%s)%n    %s%s%n",
                    mode, i, fmt(it.shortTtftMillis()), !it.reachedPrefill() ? "- (cancelled before it reached prefill)"
                            : it.abortMillis() < 0 ? "never (ran to completion)" : fmt(it.abortMillis()) + " ms",
                    fmt(it.inFlightChunkMillis()), it.wastedChunks(),
                    it.layersAfterCancel() < 0 ? "-" : Integer.toString(it.layersAfterCancel()), it.stopDetail(),
                    it.hops(), polled ? " (journal polled every " + pollMillis + " ms)" : "");
            (polled ? polledHops : hops).add(it.hops());
        }
        Prometheus after = Prometheus.scrape(stack.prefill());
        double observedToStopped = histogramP99Millis(histogramBefore, after);
        transferLine = transferLine(mode, histogramBefore, after, limits);
        limits.close();
        out.println(transferLine);
        out.println(hopsLine(mode, hops));
        if (!polledHops.isEmpty()) {
            out.println(hopsLine(mode + " polled", polledHops));
        }
        double chunk = percentile(chunkTimes, 50);
        double ttftP50 = percentile(ttfts, 50);
        double layersMean = layersAfter.stream().mapToDouble(Double::doubleValue).average().orElse(Double.NaN);
        return "%-14s %10s %12s %12s %7s %11s %11s %10s %12s %10s %9s %12s %11s".formatted(mode, fmt(idleTtft),
                fmt(ttftP50),
                fmt(percentile(ttfts, 99)), "%.2f".formatted(ttftP50 / idleTtft),
                aborts.isEmpty() ? "never" : fmt(percentile(aborts, 50)),
                aborts.isEmpty() ? "never" : fmt(percentile(aborts, 99)), fmt(chunk),
                overruns.isEmpty() ? "-" : fmt(percentile(overruns, 99)),
                Double.isNaN(observedToStopped) ? "-" : "≤" + fmt(observedToStopped),
                "%.1f".formatted((double) wasted / n),
                Double.isNaN(layersMean) ? "-" : "%.2f".formatted(layersMean),
                layersAfter.isEmpty() ? "-" : fmt(percentile(layersAfter, 99)));
    }

    /** p50 / p99 of each hop of the disconnect → abort leg over this mode's iterations. */
    private static String hopsLine(String mode, List<Hops> hops) {
        java.util.function.Function<java.util.function.ToDoubleFunction<Hops>, String> p = f -> {
            List<Double> v = hops.stream().mapToDouble(f).filter(x -> x >= 0).boxed().toList();
            return fmt(percentile(v, 50)) + " / " + fmt(percentile(v, 99));
        };
        return ("%-14s hops, p50 / p99 ms: disconnect→decode CANCEL_OBSERVED %s; disconnect→prefill CANCEL_OBSERVED "
                + "%s; prefill CANCEL_OBSERVED→STOPPED %s; STOPPED→seen by the poller %s; a layer of the chunk before "
                + "%s").formatted(mode, p.apply(Hops::toDecodeObserved), p.apply(Hops::toPrefillObserved),
                p.apply(Hops::observedToStopped), p.apply(Hops::stoppedToSeen), p.apply(Hops::layerMillis));
    }

    /**
     * The KV transfer's rate in the running services over this mode's iterations: {@code Δ bytes / Δ burst time} of
     * prefill's send bursts (the pages one chunk finished, handed to the session → all acknowledged), against this
     * machine's memcpy and loopback TCP rates for a burst of the same size, sampled between the same iterations.
     */
    private static String transferLine(String mode, Prometheus before, Prometheus after, CopyLimits limits) {
        double bursts = after.sum(BURST_BYTES + "_count") - before.sum(BURST_BYTES + "_count");
        double bytes = after.sum(BURST_BYTES + "_sum") - before.sum(BURST_BYTES + "_sum");
        double seconds = after.sum(BURST_TIME + "_sum") - before.sum(BURST_TIME + "_sum");
        if (bursts <= 0 || seconds <= 0) {
            return "%-14s KV transfer: no acknowledged send burst in the measured iterations".formatted(mode);
        }
        String backend = "?";
        double most = 0;
        for (Prometheus.Sample sample : after.samples("ripcord_kv_bytes_total", "direction", "sent")) {
            double moved = sample.value() - before.sum("ripcord_kv_bytes_total", "direction", "sent", "backend",
                    sample.labels().getOrDefault("backend", ""));
            if (moved > most) {
                most = moved;
                backend = sample.labels().getOrDefault("backend", "?");
            }
        }
        double rate = bytes / seconds;
        return ("%-14s KV transfer (%s): %.0f bursts, mean %.0f KiB, %.0f MB/s in the services; this machine, same "
                + "burst size, between the same iterations: memcpy %.0f MB/s (services %.0f %%), loopback TCP %.0f MB/s "
                + "(services %.0f %%)%s").formatted(mode, backend, bursts, bytes / bursts / 1024, rate / 1e6,
                limits.memcpyRate() / 1e6, 100 * rate / limits.memcpyRate(), limits.tcpRate() / 1e6,
                100 * rate / limits.tcpRate(), writeBreakdown(backend, before, after, most, limits));
    }

    /**
     * Where the pages' time in the library went, from kv-transfer-lib's {@code ripcord.kv.write.time} (one sample per
     * acknowledged write, in two phases): the mean per write of {@code transport} (accepted → bytes out of the
     * source: the copy, or the kernel taking the last TCP piece) and {@code acknowledgement} (→ WRITE_ACK read back),
     * and the bytes acknowledged over the two together, against memcpy and the socket.
     */
    private static String writeBreakdown(String backend, Prometheus before, Prometheus after, double sentBytes,
                                         CopyLimits limits) {
        String name = "ripcord_kv_write_time_seconds";
        double writes = after.sum(name + "_count", "backend", backend, "phase", "transport")
                - before.sum(name + "_count", "backend", backend, "phase", "transport");
        double transport = after.sum(name + "_sum", "backend", backend, "phase", "transport")
                - before.sum(name + "_sum", "backend", backend, "phase", "transport");
        double ack = after.sum(name + "_sum", "backend", backend, "phase", "acknowledgement")
                - before.sum(name + "_sum", "backend", backend, "phase", "acknowledgement");
        if (writes <= 0 || transport + ack <= 0) {
            return "";
        }
        double inLibrary = sentBytes / (transport + ack);
        return ("; per write (%.0f): transport %.2f ms, waiting for the acknowledgement %.2f ms; bytes over the time "
                + "in the library %.0f MB/s (memcpy %.0f %%, loopback TCP %.0f %%)").formatted(writes,
                1000 * transport / writes, 1000 * ack / writes, inLibrary / 1e6,
                100 * inLibrary / limits.memcpyRate(), 100 * inLibrary / limits.tcpRate());
    }

    /**
     * One round: the long prompt, the disconnect after {@link #cancelAfterMillis}, the short request at once; then
     * wait until the long prompt's prefill has ended and both workers are idle.
     */
    private Iteration iteration(String tag, int promptBytes, boolean poll) throws Exception {
        awaitIdle();
        String longId = tag + "-long-" + UUID.randomUUID();
        long mark = Journal.mark(stack.prefill());
        long decodeMark = Journal.mark(stack.decode());
        JournalPoller poller = poll ? new JournalPoller(stack.prefill(), mark, longId, pollMillis) : null;
        Thread polling = poller == null ? null : Thread.ofPlatform().daemon().name("journal-poller").start(poller);
        try {
            Call longCall = client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(promptBytes), 1, true),
                    longId);
            Thread.sleep(cancelAfterMillis);
            // Read right before the disconnect: later chunks ran for nobody.
            List<JournalEntry> before = Journal.since(stack.prefill(), mark).entries();
            long seqAtDisconnect = before.isEmpty() ? mark : before.getLast().seq();
            longCall.disconnect();
            long disconnectedMicros = epochMicros(longCall.disconnectNanos());
            Call shortCall = shortRequest(tag + "-short-" + UUID.randomUUID());
            shortCall.outcome().get(10, TimeUnit.MINUTES);
            // Over when both workers hold nothing: the long prompt may have ended at any stage, or (cold, in the
            // warm-up) never have reached prefill at all.
            longCall.outcome().get(10, TimeUnit.MINUTES);
            awaitIdle();
            Journal journal = Journal.since(stack.prefill(), mark);
            Long stoppedSeen = poller == null ? null : poller.firstSeen.get("STOPPED");
            Hops hops = Hops.of(journal, Journal.since(stack.decode(), decodeMark), longId, disconnectedMicros,
                    stoppedSeen == null ? -1 : epochMicros(stoppedSeen));
            // Every time below is the prefill journal's own stamp (atMicros), on the host's wall clock.
            List<Long> chunkAt = journal.of(longId).stream().filter(e -> e.event().equals("CHUNK"))
                    .map(JournalEntry::atMicros).toList();
            long stoppedAt = stamp(journal, longId, "STOPPED");
            // The chunk in flight at the disconnect: from the last chunk (or the start) before it to the first
            // chunk after it. The contract is that the abort waits for at most this one chunk.
            List<Long> chunkBefore = chunkAt.stream().filter(t -> t < disconnectedMicros).toList();
            long started = stamp(journal, longId, "STARTED");
            long inFlightFrom = !chunkBefore.isEmpty() ? chunkBefore.getLast()
                    : started > 0 ? started : disconnectedMicros;
            double inFlightChunk = chunkAt.stream().filter(t -> t >= disconnectedMicros).findFirst()
                    .map(t -> (t - inFlightFrom) / 1e3).orElse(0.0);
            List<Double> chunkMillis = new ArrayList<>();
            for (int i = 1; i < chunkAt.size(); i++) {
                chunkMillis.add((chunkAt.get(i) - chunkAt.get(i - 1)) / 1e3);
            }
            long wasted = journal.of(longId).stream()
                    .filter(e -> e.event().equals("CHUNK") && e.seq() > seqAtDisconnect).count();
            return new Iteration(shortCall.ttftNanos() / 1e6,
                    stoppedAt <= 0 ? -1 : (stoppedAt - disconnectedMicros) / 1e3, chunkMillis, wasted,
                    journal.has(longId, "QUEUED"), inFlightChunk, layersAfterCancel(journal, longId),
                    journal.events(longId).stream().filter(e -> e.startsWith("CANCEL_OBSERVED")
                            || e.startsWith("STOPPED")).toList().toString(), hops);
        } finally {
            if (poller != null) {
                poller.stop = true;
                polling.join();
            }
        }
    }

    /** The journal's wall-clock stamp of {@code id}'s first {@code event}, or -1. */
    private static long stamp(Journal journal, String id, String event) {
        return journal.of(id).stream().filter(e -> e.event().equals(event)).mapToLong(JournalEntry::atMicros)
                .findFirst().orElse(-1);
    }

    /** The model's layer count, learnt from the first journal entry that carries {@code layer=B/L}. */
    private int layers;

    /**
     * Prefill work after the cancel was observed, in layer-chunks, from the journal (see the class comment); -1 when
     * the prompt was not stopped mid-prefill (cancelled while queued, stopped while its transfer completed, or never).
     */
    private int layersAfterCancel(Journal journal, String longId) {
        if (!journal.has(longId, "CANCEL_OBSERVED") || !journal.has(longId, "STOPPED")
                || !journal.has(longId, "STARTED") || journal.has(longId, "DONE")) {
            return -1;
        }
        var observedAt = journal.layer(longId, "CANCEL_OBSERVED");
        var stoppedAt = journal.layer(longId, "STOPPED");
        observedAt.or(() -> stoppedAt).ifPresent(l -> layers = l[1]);
        if (layers == 0) {
            return -1;
        }
        long observedSeq = journal.seq(longId, "CANCEL_OBSERVED");
        long chunksBefore = journal.of(longId).stream().filter(e -> e.event().equals("CHUNK") && e.seq() < observedSeq)
                .count();
        long chunksAll = journal.count(longId, "CHUNK");
        long from = observedAt.isPresent() ? (long) journal.chunk(longId, "CANCEL_OBSERVED") * layers + observedAt.get()[0]
                : chunksBefore * layers;
        boolean inside = journal.of(longId).stream().anyMatch(e -> e.event().equals("STOPPED")
                && e.detail().endsWith(" inside"));
        long to = stoppedAt.isPresent() ? (long) journal.chunk(longId, "STOPPED") * layers + stoppedAt.get()[0]
                + (inside ? 1 : 0) : chunksAll * layers;
        return (int) Math.max(0, to - from);
    }

    /**
     * @param abortMillis   disconnect → STOPPED seen, or -1 if the prompt was not stopped mid-prefill
     * @param reachedPrefill whether the long prompt reached the prefill worker before the disconnect stopped it
     */
    private record Iteration(double shortTtftMillis, double abortMillis, List<Double> chunkMillis, long wastedChunks,
                             boolean reachedPrefill, double inFlightChunkMillis, int layersAfterCancel,
                             String stopDetail, Hops hops) {

        /** How far the abort overran the chunk it had to wait for: the target is at most 25 ms. */
        double overrunMillis() {
            return abortMillis - inFlightChunkMillis;
        }
    }

    /**
     * The disconnect → abort leg split at the stamps the processes already keep, all on the host's wall clock in
     * microseconds (one host: the processes share it): the client's disconnect (its {@code nanoTime} carried over to
     * the wall clock), decode's {@code CANCEL_OBSERVED} (the gateway noticed the disconnect and told decode; in mode
     * {@code kafka} decode hears it over Kafka), prefill's {@code CANCEL_OBSERVED} and {@code STOPPED} (journal
     * {@code atMicros}), and the poller's first sight of {@code STOPPED}. {@code layerMillis} is the mean layer of the
     * chunk before the one that stopped (its {@code CHUNK} entries' interval over the layer count), for scale. Each
     * figure is -1 when a stamp is missing.
     */
    record Hops(double toDecodeObserved, double toPrefillObserved, double observedToStopped, double stoppedToSeen,
                double layerMillis) {

        static Hops of(Journal prefill, Journal decode, String id, long disconnectedMicros, long seenMicros) {
            long prefillObserved = at(prefill, id, "CANCEL_OBSERVED");
            long stopped = at(prefill, id, "STOPPED");
            long decodeObserved = at(decode, id, "CANCEL_OBSERVED");
            List<Long> chunkEnds = new ArrayList<>();
            long started = at(prefill, id, "STARTED");
            if (started > 0) {
                chunkEnds.add(started);
            }
            prefill.of(id).stream().filter(e -> e.event().equals("CHUNK")).forEach(e -> chunkEnds.add(e.atMicros()));
            int[] layer = prefill.layer(id, "STOPPED").or(() -> prefill.layer(id, "CANCEL_OBSERVED")).orElse(null);
            double layerMillis = chunkEnds.size() < 2 || layer == null ? -1
                    : (chunkEnds.getLast() - chunkEnds.get(chunkEnds.size() - 2)) / 1e3 / layer[1];
            return new Hops(between(disconnectedMicros, decodeObserved), between(disconnectedMicros, prefillObserved),
                    between(prefillObserved, stopped), between(stopped, seenMicros), layerMillis);
        }

        private static long at(Journal journal, String id, String event) {
            return journal.of(id).stream().filter(e -> e.event().equals(event)).mapToLong(JournalEntry::atMicros)
                    .findFirst().orElse(-1);
        }

        private static double between(long fromMicros, long toMicros) {
            return fromMicros <= 0 || toMicros <= 0 ? -1 : (toMicros - fromMicros) / 1e3;
        }

        @Override
        public String toString() {
            return "disconnect→decode observed %s, →prefill observed %s, observed→STOPPED %s, STOPPED→seen %s ms; "
                    .formatted(fmt(toDecodeObserved), fmt(toPrefillObserved), fmt(observedToStopped),
                            fmt(stoppedToSeen)) + "a layer of the chunk before: %s ms".formatted(fmt(layerMillis));
        }
    }

    /** {@code nanos} of {@link System#nanoTime()} on the wall clock, microseconds since the epoch. */
    private static long epochMicros(long nanos) {
        return JournalEntry.nowMicros() - (System.nanoTime() - nanos) / 1_000;
    }

    /** Both workers hold nothing; without {@link Endpoints#awaitWorkersIdle}'s minute limit (mode none is slow). */
    private void awaitIdle() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
        while (!(idle(stack.status(Role.PREFILL)) && idle(stack.status(Role.DECODE)))) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("workers still busy after 10 minutes");
            }
            Thread.sleep(IDLE_POLL);
        }
    }

    private static boolean idle(WorkerStatus s) {
        return s.queued() == 0 && s.running() == 0 && s.livePages() == 0 && s.liveSessions() == 0
                && s.liveRegistrations() == 0;
    }

    private Call shortRequest(String id) {
        return client.start(StreamingClient.completion(stack.model(), Texts.ofBytes(shortBytes, 5), 4, true), id);
    }

    private static double ttftMillis(Call call) throws Exception {
        Outcome outcome = call.outcome().get(10, TimeUnit.MINUTES);
        if (!outcome.completed()) {
            throw new IllegalStateException("short request failed: " + outcome);
        }
        return call.ttftNanos() / 1e6;
    }

    /**
     * Reads the prefill journal every {@code pollMillis} and notes when each entry of one request was first seen: what
     * this bench did before the journal had wall-clock stamps, kept as an option ({@code --poll-ms}) to measure
     * what such polling costs the stack (an HTTP request and a JSON answer on the prefill worker every poll).
     */
    private static final class JournalPoller implements Runnable {
        final URI prefill;
        final String requestId;
        final long pollMillis;
        final AtomicLong lastSeq;
        final Map<String, Long> firstSeen = new ConcurrentHashMap<>();
        volatile boolean stop;

        JournalPoller(URI prefill, long mark, String requestId, long pollMillis) {
            this.prefill = prefill;
            this.requestId = requestId;
            this.pollMillis = pollMillis;
            this.lastSeq = new AtomicLong(mark);
        }

        @Override
        public void run() {
            while (!stop) {
                List<JournalEntry> entries = Journal.since(prefill, lastSeq.get()).entries();
                long now = System.nanoTime();
                for (JournalEntry e : entries) {
                    lastSeq.set(e.seq());
                    if (e.requestId().equals(requestId)) {
                        firstSeen.putIfAbsent(e.event(), now);
                    }
                }
                try {
                    Thread.sleep(pollMillis);
                } catch (InterruptedException ex) {
                    return;
                }
            }
        }
    }

    /** p99 of the prefill worker's cancel-observed → stopped histogram over the run, from its bucket deltas. */
    private static double histogramP99Millis(Prometheus before, Prometheus after) {
        String name = "ripcord_cancel_abort_latency_seconds_bucket";
        List<Prometheus.Sample> buckets = after.samples(name, "service", "prefill");
        double total = after.sum("ripcord_cancel_abort_latency_seconds_count", "service", "prefill")
                - before.sum("ripcord_cancel_abort_latency_seconds_count", "service", "prefill");
        if (total <= 0) {
            return Double.NaN;
        }
        double[][] les = buckets.stream().map(b -> new double[] {
                b.labels().get("le").equals("+Inf") ? Double.POSITIVE_INFINITY
                        : Double.parseDouble(b.labels().get("le")),
                b.value() - before.sum(name, "service", "prefill", "le", b.labels().get("le"))})
                .sorted((a, b) -> Double.compare(a[0], b[0])).toArray(double[][]::new);
        for (double[] le : les) {
            if (le[1] >= 0.99 * total) {
                return le[0] * 1000;
            }
        }
        return Double.POSITIVE_INFINITY;
    }

    private static double percentile(List<Double> values, double p) {
        if (values.isEmpty()) {
            return Double.NaN;
        }
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int index = (int) Math.ceil(p / 100.0 * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, index))];
    }

    private static String fmt(double millis) {
        return Double.isNaN(millis) ? "-" : "%.0f".formatted(millis);
    }

    private static String servedModel(URI gateway) throws Exception {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpResponse<String> response = http.send(TestCredentials.withApiKey(
                        HttpRequest.newBuilder(gateway.resolve("/v1/models")), TestCredentials.apiKey(gateway)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        return JsonMapper.builder().build().readTree(response.body()).path("data").path(0).path("id").asString();
    }
}
