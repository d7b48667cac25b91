package dev.ripcord.stack.storm;

import java.io.PrintStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.protocol.DecodeRequest;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.stack.TestCredentials;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.bench.BenchUsage;
import dev.ripcord.stack.cancel.Prometheus;
import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import dev.ripcord.stack.storm.FaultSchedule.Fault;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.awaitility.Awaitility;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code ./ripcord bench faults}: the random-phase cancel storm ({@link Storm}) on a stack built to be broken
 * ({@link FaultStack}: 2 gateways, 2 prefill, 2 decode, a 3-node KRaft cluster, proxies on every gateway-to-worker
 * and service-to-Kafka link) while a seeded {@link FaultSchedule} kills and restarts the leader broker of a
 * cancellations partition, pauses a prefill worker, kills a decode worker mid-transfer and restarts it, restarts a
 * gateway, and delays, resets and partitions the links. Then the oracle, once every process is back:
 *
 * <ul>
 *   <li>{@code ripcord audit} over the window: 0 violations (spans it cannot verify counted and shown);</li>
 *   <li>0 leaked pages, sessions, registrations or regions on every worker; the gateways hold nothing;</li>
 *   <li>0 wrong outputs among completed requests (the storm's, and a steady load's that runs for as long as the
 *       faults do, so that every fault meets traffic), every cancelled request's partial text a prefix of the
 *       reference;</li>
 *   <li>no request that nobody cancelled answered as cancelled: IDs reused once their request ended and IDs both
 *       keys use at once ({@link StormPlan}) reach only their own request;</li>
 *   <li>every client got a terminal answer (a completion, a cancellation, or an error) within its deadline;</li>
 *   <li>no cancel lost: each cancel an operator published while a broker or worker was down, or while the services
 *       were cut off from Kafka, cancels its request when the request comes;</li>
 *   <li>nobody waits behind a ghost: a short request's TTFT after recovery is within one chunk of its idle TTFT.</li>
 * </ul>
 *
 * <p>{@code --json} prints one summary object on stdout (the report goes to stderr). Exits 0 when every check
 * holds, 1 otherwise, 2 on a usage error.
 */
public final class FaultsBench {

    static final String USAGE = BenchUsage.read(FaultsBench.class);

    /** Samples per TTFT figure: their median is the figure. */
    private static final int TTFT_SAMPLES = 7;
    private static final Duration PROBE_LIMIT = Duration.ofSeconds(60);
    /** Requests of the steady load in flight at once, beside the storm's. */
    private static final int STEADY_CONCURRENCY = 4;

    private FaultsBench() {
    }

    /** What a run was asked for. */
    record Config(int requests, long seed, Set<Fault> faults, int concurrency, double cancelShare) {
    }

    /** Everything a run found; {@link #clean()} says whether every check held. */
    record Summary(Config config, List<FaultSchedule.Injected> injected, Map<String, String> skipped,
                   Storm.Report storm, long lostCancels, List<String> lostCancelIds, long probes,
                   long clientsWithoutAnswer, long failedWithError, double ttftIdleMs, double chunkMs,
                   double ttftAfterMs, Steady steady) {

        /** What the steady load (requests nobody cancels, for as long as the faults run) came to. */
        record Steady(long sent, long completed, long wrongOutputs, long withoutAnswer, Map<String, Long> errors) {
        }

        /** Wrong outputs among the storm's and the steady load's completed requests. */
        long wrongOutputs() {
            return storm.wrongOutputs() + steady.wrongOutputs();
        }

        boolean injectionsFailed() {
            return skipped.values().stream().anyMatch(why -> why.startsWith("injection failed"));
        }

        boolean ttftWithinOneChunk() {
            return ttftAfterMs <= ttftIdleMs + chunkMs;
        }

        boolean clean() {
            return storm.audit().ran() && storm.audit().violations() == 0 && storm.workersIdle()
                    && storm.leaks() == 0 && wrongOutputs() == 0 && storm.partialNotPrefix() == 0
                    && storm.reuse().abortedUncancelled() == 0 && lostCancels == 0 && clientsWithoutAnswer == 0 && ttftWithinOneChunk() && !injectionsFailed();
        }

        ObjectNode json() {
            JsonMapper mapper = JsonMapper.builder().build();
            ObjectNode o = mapper.createObjectNode();
            o.put("requests", config.requests());
            o.put("seed", config.seed());
            var faults = o.putArray("faults_injected");
            injected.forEach(i -> faults.add(i.fault().id));
            ObjectNode skip = o.putObject("faults_skipped");
            skipped.forEach(skip::put);
            o.put("audit_ran", storm.audit().ran());
            o.put("audit_violations", storm.audit().violations());
            o.put("unverifiable", storm.audit().unverifiable());
            o.put("leaks", storm.leaks());
            o.put("workers_idle", storm.workersIdle());
            o.put("wrong_outputs", wrongOutputs());
            o.put("partial_not_prefix", storm.partialNotPrefix());
            o.put("ids_reused", storm.reuse().sent());
            o.put("ids_shared_by_both_keys", storm.reuse().twins());
            o.put("aborted_uncancelled", storm.reuse().abortedUncancelled());
            o.put("lost_cancels", lostCancels);
            o.put("cancel_probes", probes);
            o.put("clients_without_answer", clientsWithoutAnswer);
            var noAnswer = o.putArray("clients_without_answer_requests");
            storm.noAnswer().forEach(noAnswer::add);
            o.put("answered_with_error", failedWithError);
            ObjectNode outcomes = o.putObject("outcomes");
            storm.results().forEach(outcomes::put);
            ObjectNode steadyNode = o.putObject("steady_load");
            steadyNode.put("sent", steady.sent());
            steadyNode.put("completed", steady.completed());
            ObjectNode steadyErrors = steadyNode.putObject("errors");
            steady.errors().forEach(steadyErrors::put);
            ObjectNode recovery = o.putObject("recovery_s");
            injected.forEach(i -> recovery.put(i.fault().id, Math.round(i.recoverySeconds() * 10) / 10.0));
            ObjectNode under = o.putObject("under_load");
            injected.forEach(i -> under.put(i.fault().id, i.underLoad()));
            o.put("ttft_idle_ms", Math.round(ttftIdleMs));
            o.put("chunk_ms", Math.round(chunkMs));
            o.put("ttft_after_recovery_ms", Math.round(ttftAfterMs));
            o.put("ttft_within_one_chunk", ttftWithinOneChunk());
            o.put("storm_wall_s", Math.round(storm.wallSeconds() * 10) / 10.0);
            o.put("clean", clean());
            return o;
        }

        void print(PrintStream out) {
            out.printf("faults: %d requests, seed %d, concurrency %d, cancel share %.2f%n", config.requests(),
                    config.seed(), config.concurrency(), config.cancelShare());
            for (FaultSchedule.Injected i : injected) {
                out.printf("  %-16s %-40s %s; serving again after %.1f s%s%n", i.fault().id, i.target(), i.detail(),
                        i.recoverySeconds(), i.underLoad() ? "" : " (after the storm's last request)");
            }
            skipped.forEach((fault, why) -> out.printf("  %-16s NOT INJECTED: %s%n", fault, why));
            storm.print(out);
            out.printf("  cancels published during outages: %d, lost (their request was not cancelled): %d%s%n",
                    probes, lostCancels, lostCancelIds.isEmpty() ? "" : " " + lostCancelIds);
            out.printf("  steady load while the faults ran: %d sent, %d completed, %d wrong outputs, errors %s%n",
                    steady.sent(), steady.completed(), steady.wrongOutputs(), steady.errors());
            out.printf("  clients without a terminal answer within their deadline: %d; answered with an error: %d%n",
                    clientsWithoutAnswer, failedWithError);
            out.printf("  short request TTFT: idle %.0f ms, one chunk %.0f ms, after recovery %.0f ms (%s)%n",
                    ttftIdleMs, chunkMs, ttftAfterMs, ttftWithinOneChunk() ? "within one chunk of idle"
                            : "MORE than one chunk over idle");
            out.println("  faults verdict: " + (clean() ? "CLEAN" : "NOT CLEAN"));
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        boolean json = false;
        // The in-process cluster's nodes warn at every connection a fault breaks: expected here, and the report is
        // what this bench prints. Errors still show.
        for (String name : new String[] {"kafka", "org.apache.kafka"}) {
            if (org.slf4j.LoggerFactory.getLogger(name) instanceof ch.qos.logback.classic.Logger logger) {
                logger.setLevel(ch.qos.logback.classic.Level.ERROR);
            }
        }
        for (String arg : args) {
            if (arg.equals("--help")) {
                System.out.println(USAGE);
                System.exit(0);
            }
            if (arg.equals("--json")) {
                json = true;
                continue;
            }
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0 || !arg.substring(2, eq).matches(
                    "requests|seed|faults|concurrency|cancel-share")) {
                System.err.println("unexpected argument '" + arg + "'\n" + USAGE);
                System.exit(2);
            }
            options.put(arg.substring(2, eq), arg.substring(eq + 1));
        }
        Config config;
        try {
            Set<Fault> faults = EnumSet.noneOf(Fault.class);
            String list = options.getOrDefault("faults", Fault.ids(EnumSet.allOf(Fault.class)));
            for (String id : list.split(",")) {
                if (!id.isBlank()) {
                    faults.add(Fault.of(id.strip()));
                }
            }
            config = new Config(Integer.parseInt(options.getOrDefault("requests", "2000")),
                    Long.parseLong(options.getOrDefault("seed", "42")), faults,
                    Integer.parseInt(options.getOrDefault("concurrency", "16")),
                    Double.parseDouble(options.getOrDefault("cancel-share", "0.7")));
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage() + "\n" + USAGE);
            System.exit(2);
            return;
        }
        PrintStream report = json ? System.err : System.out;
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/bench-logs/faults");
        report.printf("machine: %d cores, load average %s%n", Runtime.getRuntime().availableProcessors(),
                loadAverage());
        Summary summary = run(config, "faults", logDir, report);
        summary.print(report);
        report.printf("machine after: load average %s%n", loadAverage());
        if (json) {
            System.out.println(summary.json());
        }
        System.exit(summary.clean() ? 0 : 1);
    }

    /** The stack's properties: the storm's (several gateways). */
    static Map<String, String> properties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("ripcord.gateway.cancel-relay.answer-timeout", "10s");
        return p;
    }

    /** Starts the stack, runs the storm and the schedule, the oracle, stops the stack. */
    static Summary run(Config config, String name, Path logDir, PrintStream log) throws Exception {
        TestStacks.Instances instances = new TestStacks.Instances(2, 2, 2);
        log.println("starting " + instances + " on a " + FaultStack.BROKERS + "-node KRaft cluster (logs in "
                + logDir + ") ...");
        long started = System.nanoTime();
        try (FaultStack faults = FaultStack.start(name, properties(), instances, logDir, null)) {
            log.printf("stack up in %.1f s; proxies: %s%n", (System.nanoTime() - started) / 1e9,
                    faults.describeProxies());
            TestStack stack = faults.stack();
            List<StreamingClient> gateways = new ArrayList<>();
            for (int i = 0; i < instances.gateways(); i++) {
                gateways.add(new StreamingClient(stack.url(dev.ripcord.stack.Role.GATEWAY, i)));
            }
            AtomicLong probeSeq = new AtomicLong();
            String shortPrompt = Storm.ofBytes(7);
            String chunkPrompt = Storm.ofBytes(Integer.parseInt(stack.properties()
                    .getOrDefault("ripcord.prefill.chunk-tokens", "512")) - 1);
            FaultSchedule.Probe serves = () -> {
                for (StreamingClient gateway : gateways) {
                    try {
                        Outcome o = gateway.start(StreamingClient.completion(stack.modelName(), shortPrompt, 4, true),
                                "serves-" + probeSeq.incrementAndGet()).outcome().get(PROBE_LIMIT.toSeconds(),
                                TimeUnit.SECONDS);
                        if (!o.completed()) {
                            return false;
                        }
                    } catch (Exception e) {
                        return false;
                    }
                }
                return true;
            };
            // Idle figures first, on the warm stack.
            ttftMillis(gateways.get(0), stack, shortPrompt, 3, "warm"); // warms the path, not counted
            double idle = ttftMillis(gateways.get(0), stack, shortPrompt, TTFT_SAMPLES, "idle");
            double chunk = ttftMillis(gateways.get(0), stack, chunkPrompt, TTFT_SAMPLES, "chunk");

            FaultSchedule schedule = new FaultSchedule(faults, config.faults(), config.seed(), serves, log);
            log.println("fault order: " + schedule.order().stream().map(f -> f.id).toList());
            AtomicBoolean stormRunning = new AtomicBoolean(true);
            SteadyLoad steady = SteadyLoad.start(stack, gateways, STEADY_CONCURRENCY, config.seed());
            Thread faultThread = Thread.ofPlatform().name("fault-schedule").start(() -> {
                try {
                    schedule.run(stormRunning::get);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            StormPlan plan = StormPlan.draw(config.requests(), config.seed(), instances.gateways(),
                    config.cancelShare());
            // Per probe, the decode workers that did not answer it as cancelled.
            Map<String, List<String>> probeAnswers = new TreeMap<>();
            double[] after = new double[1];
            Storm.Report report = new Storm(stack, config.concurrency()).run(plan, config.seed(), () -> {
                stormRunning.set(false);
                faultThread.join();
                steady.close();
                // Every cancel published during an outage, now that everything is back: its request comes, to every
                // decode worker (the one that was killed replayed the topic's window), as a gateway sends the leg;
                // once each worker has read the topic up to now, so that a probe it misses is lost, not late.
                awaitDecodesReadTheTopic(faults.directBootstrap(), stack, instances.decodes());
                for (String id : schedule.probeIds()) {
                    List<String> missed = new ArrayList<>();
                    for (int d = 0; d < instances.decodes(); d++) {
                        // Cancelled at admission: one line, the typed cancel (from the tombstone it found).
                        List<String> lines = decodeLeg(stack, d, id);
                        if (lines.size() != 1 || !lines.getFirst().contains("\"CANCELLED\"")) {
                            missed.add("decode-" + (d + 1) + ": " + abbreviate(lines.toString()));
                        }
                    }
                    probeAnswers.put(id, missed);
                }
                after[0] = ttftMillis(gateways.get(0), stack, shortPrompt, TTFT_SAMPLES, "after");
            });
            List<String> lost = new ArrayList<>();
            probeAnswers.forEach((id, where) -> {
                if (!where.isEmpty()) {
                    lost.add(id + " " + where);
                }
            });
            long withoutAnswer = 0;
            long withError = 0;
            for (Map.Entry<String, Long> f : report.failures().entrySet()) {
                if (f.getKey().startsWith("client:")) {
                    withoutAnswer += f.getValue();
                } else {
                    withError += f.getValue();
                }
            }
            withoutAnswer += steady.withoutAnswer();
            withError += steady.answeredWithError();
            return new Summary(config, schedule.injected(), schedule.skipped(), report, lost.size(), lost,
                    probeAnswers.size(), withoutAnswer, withError, idle, chunk, after[0],
                    new Summary.Steady(steady.sent(), steady.completed(), steady.wrongOutputs(),
                            steady.withoutAnswer(), steady.errors()));
        }
    }

    /**
     * Publishes one marker cancel on every partition of the cancellations topic and waits until every decode worker
     * has consumed that many more records: a worker reads each partition in order, so it has then read every record
     * published before the markers (the probes among them). Markers name fresh internal IDs no request uses.
     */
    private static void awaitDecodesReadTheTopic(String bootstrap, TestStack stack, int decodes) {
        String topic = "ripcord.cancellations";
        double[] before = new double[decodes];
        for (int d = 0; d < decodes; d++) {
            before[d] = consumedCancels(stack, d);
        }
        int partitions;
        try (KafkaProducer<String, String> operator = FaultSchedule.operator(bootstrap)) {
            partitions = operator.partitionsFor(topic).size();
            for (int p = 0; p < partitions; p++) {
                String id = RequestIds.internalId("marker-" + p);
                operator.send(new ProducerRecord<>(topic, p, id, FaultSchedule.cancelEvent(id))).get(60,
                        TimeUnit.SECONDS);
            }
        } catch (Exception e) {
            throw new IllegalStateException("the markers after the faults were not acknowledged: " + e, e);
        }
        int markers = partitions;
        Awaitility.await("every decode worker read the cancellations topic up to the markers")
                .atMost(PROBE_LIMIT).pollInterval(Duration.ofMillis(100))
                .until(() -> java.util.stream.IntStream.range(0, decodes)
                        .allMatch(d -> consumedCancels(stack, d) >= before[d] + markers));
    }

    private static double consumedCancels(TestStack stack, int decode) {
        return Prometheus.scrape(stack.url(dev.ripcord.stack.Role.DECODE, decode)).sum("ripcord_cancel_consumed_total");
    }

    /**
     * {@code POST /internal/v1/decode} for {@code internalId} to decode worker {@code index}, as a gateway sends the
     * decode leg, read to the end: its NDJSON lines, or one line saying what went wrong. A request whose cancel the
     * worker holds is answered with one line, the cancel.
     */
    private static List<String> decodeLeg(TestStack stack, int index, String internalId) {
        DecodeRequest body = new DecodeRequest(internalId, 4, 8, Sampling.GREEDY, false);
        HttpRequest request = TestCredentials.withInternalToken(HttpRequest.newBuilder(
                        stack.url(dev.ripcord.stack.Role.DECODE, index).resolve(InternalApi.DECODE)),
                        stack.internalToken())
                .timeout(PROBE_LIMIT)
                .header(RequestIds.HEADER, internalId)
                .header("Content-Type", "application/json")
                .header("Accept", InternalApi.NDJSON)
                .POST(HttpRequest.BodyPublishers.ofByteArray(JsonMapper.builder().build().writeValueAsBytes(body)))
                .build();
        try (HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build()) {
            HttpResponse<java.util.stream.Stream<String>> response = client.send(request,
                    HttpResponse.BodyHandlers.ofLines());
            try (var lines = response.body()) {
                List<String> all = lines.filter(l -> !l.isBlank()).toList();
                return response.statusCode() == 200 ? all : List.of("HTTP " + response.statusCode() + " " + all);
            }
        } catch (java.io.IOException e) {
            return List.of("no answer: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return List.of("interrupted");
        }
    }

    private static String abbreviate(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    /** The median TTFT of {@code n} streamed requests, one after another, through {@code gateway}. */
    private static double ttftMillis(StreamingClient gateway, TestStack stack, String prompt, int n, String tag) {
        double[] samples = new double[n];
        for (int i = 0; i < n; i++) {
            try {
                StreamingClient.Call call = gateway.start(StreamingClient.completion(stack.modelName(), prompt, 4, true),
                        "ttft-" + tag + "-" + i + "-" + System.nanoTime());
                Outcome o = call.outcome().get(PROBE_LIMIT.toSeconds(), TimeUnit.SECONDS);
                samples[i] = o.completed() ? call.ttftNanos() / 1e6 : Double.MAX_VALUE;
            } catch (Exception e) {
                samples[i] = Double.MAX_VALUE;
            }
        }
        Arrays.sort(samples);
        return samples[n / 2];
    }

    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).strip();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }
}
