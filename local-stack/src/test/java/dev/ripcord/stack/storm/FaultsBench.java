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
    /** How long a sabotage run waits for the workers to go idle: one that keeps a page never does. */
    private static final Duration SABOTAGE_IDLE_LIMIT = Duration.ofSeconds(5);
    /** Requests of the steady load in flight at once, beside the storm's. */
    private static final int STEADY_CONCURRENCY = 4;

    private FaultsBench() {
    }

    /**
     * What a run was asked for; {@code sabotage} a {@link dev.ripcord.cancel.Sabotage} kind's id (or several, comma
     * separated, each for another service), or null.
     */
    record Config(int requests, long seed, Set<Fault> faults, int concurrency, double cancelShare, String sabotage) {

        Config(int requests, long seed, Set<Fault> faults, int concurrency, double cancelShare) {
            this(requests, seed, faults, concurrency, cancelShare, null);
        }

        List<dev.ripcord.cancel.Sabotage> sabotaged() {
            return sabotage == null ? List.of() : Arrays.stream(sabotage.split(",")).filter(k -> !k.isBlank())
                    .map(dev.ripcord.cancel.Sabotage::of).toList();
        }
    }

    /**
     * Everything a run found: the figures, the {@link FaultsVerdict} evidence, and its gates; {@link #clean()} says
     * whether every gate held.
     */
    record Summary(Config config, List<FaultSchedule.Injected> injected, Map<String, String> skipped,
                   Storm.Report storm, List<String> lostCancelIds, long probes, double ttftIdleMs, double chunkMs,
                   double ttftAfterMs, Steady steady, FaultsVerdict.Evidence evidence,
                   List<FaultsVerdict.Gate> gates) {

        /** What the steady load (requests nobody cancels, for as long as the faults run) came to. */
        record Steady(long sent, long completed, long wrongOutputs, long withoutAnswer, Map<String, Long> errors) {
        }

        long lostCancels() {
            return lostCancelIds.size();
        }

        long clientsWithoutAnswer() {
            return evidence.withoutTerminal().size();
        }

        long wrongOutputs() {
            return evidence.wrongOutputs();
        }

        /** Whether every gate held. */
        boolean clean() {
            return FaultsVerdict.passed(gates);
        }

        String verdict() {
            return FaultsVerdict.verdict(gates);
        }

        /** The gate named {@code name}. */
        FaultsVerdict.Gate gate(String name) {
            return gates.stream().filter(g -> g.name().equals(name)).findFirst().orElseThrow(
                    () -> new IllegalArgumentException("no gate " + name));
        }

        ObjectNode json() {
            JsonMapper mapper = JsonMapper.builder().build();
            ObjectNode o = mapper.createObjectNode();
            o.put("requests", config.requests());
            o.put("seed", config.seed());
            if (config.sabotage() != null) {
                o.put("sabotage", config.sabotage());
            }
            var faults = o.putArray("faults_injected");
            injected.forEach(i -> faults.add(i.fault().id));
            ObjectNode skip = o.putObject("faults_skipped");
            skipped.forEach(skip::put);
            // Every gate as its own field: its figure, whether it held, and what failed it.
            ObjectNode gateNode = o.putObject("gates");
            for (FaultsVerdict.Gate g : gates) {
                ObjectNode n = gateNode.putObject(g.name());
                n.put("passed", g.passed());
                n.put("value", g.value());
                if (!g.detail().isEmpty()) {
                    n.put("detail", g.detail());
                }
            }
            // Per fault: its target, window, evidence, recovery, and the errors charged to it.
            Map<String, Map<String, Long>> errorsByFault = FaultsVerdict.errorsByFault(evidence);
            ObjectNode perFault = o.putObject("faults");
            Map<String, Long> unavailableDuring = FaultsVerdict.unavailableSentDuring(evidence);
            for (FaultSchedule.Injected i : injected) {
                ObjectNode f = perFault.putObject(i.fault().id);
                f.put("target", i.target());
                f.put("detail", i.detail());
                f.put("from", i.from().toString());
                f.put("to", i.to().toString());
                if (i.evidence() == null) {
                    f.putNull("evidence");
                } else {
                    f.put("evidence", i.evidence());
                }
                f.put("recovery_s", Math.round(i.recoverySeconds() * 10) / 10.0);
                f.put("under_load", i.underLoad());
                f.put("error_budget", FaultsVerdict.budget(i.fault(), evidence.budgetScale(),
                        evidence.errors().size()));
                ObjectNode errs = f.putObject("errors");
                errorsByFault.getOrDefault(i.fault().id, Map.of()).forEach(errs::put);
                f.put("unavailable_sent_while_it_lasted", unavailableDuring.getOrDefault(i.fault().id, 0L));
            }
            ObjectNode unexpected = o.putObject("errors_unexplained");
            errorsByFault.get("unexpected").forEach(unexpected::put);
            o.put("audit_ran", storm.audit().ran());
            o.put("audit_violations", storm.audit().violations());
            o.put("audit_requests", storm.audit().requests());
            o.put("unverifiable", storm.audit().unverifiable());
            o.put("leaks", storm.leaks());
            o.put("workers_idle", storm.workersIdle());
            o.put("wrong_outputs", evidence.wrongOutputs());
            o.put("partial_not_prefix", evidence.partialNotPrefix());
            o.put("ids_reused", storm.reuse().sent());
            o.put("ids_shared_by_both_keys", storm.reuse().twins());
            o.put("stray_aborts", evidence.strayAborts());
            o.put("lost_cancels", lostCancels());
            o.put("cancel_probes", probes);
            o.put("without_terminal_outcome", evidence.withoutTerminal().size());
            var noAnswer = o.putArray("without_terminal_outcome_requests");
            evidence.withoutTerminal().forEach(noAnswer::add);
            o.put("answered_with_error", evidence.errors().size());
            ObjectNode outcomes = o.putObject("outcomes");
            storm.results().forEach(outcomes::put);
            ObjectNode steadyNode = o.putObject("steady_load");
            steadyNode.put("sent", steady.sent());
            steadyNode.put("completed", steady.completed());
            ObjectNode steadyErrors = steadyNode.putObject("errors");
            steady.errors().forEach(steadyErrors::put);
            o.put("ttft_idle_ms", Math.round(ttftIdleMs));
            o.put("chunk_ms", Math.round(chunkMs));
            o.put("ttft_after_recovery_ms", Math.round(ttftAfterMs));
            o.put("storm_wall_s", Math.round(storm.wallSeconds() * 10) / 10.0);
            o.put("verdict", verdict());
            o.put("clean", clean());
            return o;
        }

        void print(PrintStream out) {
            out.printf("faults: %d requests, seed %d, concurrency %d, cancel share %.2f%s%n", config.requests(),
                    config.seed(), config.concurrency(), config.cancelShare(),
                    config.sabotage() == null ? "" : ", SABOTAGE " + config.sabotage());
            for (FaultSchedule.Injected i : injected) {
                out.printf("  %-16s %-40s %s; serving again after %.1f s%s; evidence: %s%n", i.fault().id,
                        i.target(), i.detail(), i.recoverySeconds(), i.underLoad() ? ""
                                : " (after the storm's last request)", i.evidence() == null ? "NONE" : i.evidence());
            }
            skipped.forEach((fault, why) -> out.printf("  %-16s NOT INJECTED: %s%n", fault, why));
            storm.print(out);
            out.printf("  cancels published during outages: %d, lost (their request was not cancelled): %d%s%n",
                    probes, lostCancels(), lostCancelIds.isEmpty() ? "" : " " + lostCancelIds);
            out.printf("  steady load while the faults ran: %d sent, %d completed, %d wrong outputs, errors %s%n",
                    steady.sent(), steady.completed(), steady.wrongOutputs(), steady.errors());
            out.printf("  errors by fault: %s%n", FaultsVerdict.errorsByFault(evidence));
            out.printf("  short request TTFT (shown, not gated): idle %.0f ms, one chunk %.0f ms, after recovery "
                    + "%.0f ms%n", ttftIdleMs, chunkMs, ttftAfterMs);
            out.println("  gates:");
            for (FaultsVerdict.Gate g : gates) {
                out.printf("    %-26s %s %d%s%n", g.name(), g.passed() ? "ok  " : "FAIL", g.value(),
                        g.detail().isEmpty() ? "" : "  " + g.detail());
            }
            out.println("  faults verdict: " + verdict());
        }
    }

    public static void main(String[] args) throws Exception {
        // Standard output carries the summary alone (with --json, one JSON object that `jq` reads) or the report:
        // everything else this JVM prints, its log lines above all (Kafka's clients, the stack's launcher), goes to
        // standard error. Logback's console appender looks System.out up at every write, so this reaches it too.
        PrintStream stdout = System.out;
        System.setOut(System.err);
        Map<String, String> options = new LinkedHashMap<>();
        boolean json = false;
        // Kafka's clients here (the operator's producer, the admin that asks for leaders) warn at every connection a
        // fault breaks: expected, and the report is what this bench prints. Errors still show.
        for (String name : new String[] {"kafka", "org.apache.kafka"}) {
            if (org.slf4j.LoggerFactory.getLogger(name) instanceof ch.qos.logback.classic.Logger logger) {
                logger.setLevel(ch.qos.logback.classic.Level.ERROR);
            }
        }
        for (String arg : args) {
            if (arg.equals("--help")) {
                stdout.println(USAGE);
                System.exit(0);
            }
            if (arg.equals("--json")) {
                json = true;
                continue;
            }
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0 || !arg.substring(2, eq).matches(
                    "requests|seed|faults|concurrency|cancel-share|sabotage")) {
                System.err.println("unexpected argument '" + arg + "'\n" + USAGE);
                System.exit(2);
            }
            options.put(arg.substring(2, eq), arg.substring(eq + 1));
        }
        Config config;
        try {
            Set<Fault> faults = EnumSet.noneOf(Fault.class);
            String sabotage = options.get("sabotage");
            if (sabotage != null) {
                dev.ripcord.cancel.Sabotage.of(sabotage); // one known kind, or a usage error
            }
            // A sabotage run injects no fault unless --faults names some: what the oracle catches is then the
            // sabotage alone, with no fault's error budget to hide it in.
            String list = options.getOrDefault("faults", sabotage != null ? ""
                    : Fault.ids(EnumSet.allOf(Fault.class)));
            for (String id : list.split(",")) {
                if (!id.isBlank()) {
                    faults.add(Fault.of(id.strip()));
                }
            }
            config = new Config(Integer.parseInt(options.getOrDefault("requests", "2000")),
                    Long.parseLong(options.getOrDefault("seed", "42")), faults,
                    Integer.parseInt(options.getOrDefault("concurrency", "16")),
                    Double.parseDouble(options.getOrDefault("cancel-share", "0.7")), sabotage);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage() + "\n" + USAGE);
            System.exit(2);
            return;
        }
        PrintStream report = json ? System.err : stdout;
        // One directory per seed and sabotage: two runs side by side do not write into each other's logs.
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/bench-logs/faults-" + config.seed()
                + (config.sabotage() == null ? "" : "-" + config.sabotage()));
        report.printf("machine: %d cores, load average %s%n", Runtime.getRuntime().availableProcessors(),
                loadAverage());
        Summary summary = run(config, "faults", logDir, report);
        summary.print(report);
        report.printf("machine after: load average %s%n", loadAverage());
        if (json) {
            stdout.println(summary.json());
            stdout.flush();
        }
        System.exit(summary.clean() ? 0 : 1);
    }

    /** The stack's properties: the storm's (several gateways). */
    static Map<String, String> properties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("ripcord.gateway.cancel-relay.answer-timeout", "10s");
        // The probes (cancels published during the outages for requests that come after the last fault) are sent
        // once the storm has ended, which on a loaded two-core machine can be more than the default 10 minutes
        // after their cancel: a worker keeps a cancel for a request it has not seen for this long.
        p.put("ripcord.cancel.tombstone-ttl", "2h");
        return p;
    }

    /** Starts the stack (2 gateways, 2 prefill, 2 decode), runs the storm and the schedule, the oracle, stops it. */
    static Summary run(Config config, String name, Path logDir, PrintStream log) throws Exception {
        return run(config, new TestStacks.Instances(2, 2, 2), name, logDir, log);
    }

    /** {@link #run(Config, String, Path, PrintStream)} on {@code instances}. */
    static Summary run(Config config, TestStacks.Instances instances, String name, Path logDir, PrintStream log)
            throws Exception {
        log.println("starting " + instances + " on a " + FaultStack.BROKERS + "-node KRaft cluster (logs in "
                + logDir + ") ...");
        long started = System.nanoTime();
        try (FaultStack faults = FaultStack.start(name, properties(), instances, logDir, null, config.sabotaged())) {
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
            // Idle figures first, on the warm stack (shown, not gated). Not in a sabotage run: there the first request
            // a sabotage breaks must be the storm's, inside the audit's window.
            boolean figures = config.sabotage() == null;
            if (figures) {
                ttftMillis(gateways.get(0), stack, shortPrompt, 3, "warm"); // warms the path, not counted
            }
            double idle = figures ? ttftMillis(gateways.get(0), stack, shortPrompt, TTFT_SAMPLES, "idle") : 0;
            double chunk = figures ? ttftMillis(gateways.get(0), stack, chunkPrompt, TTFT_SAMPLES, "chunk") : 0;

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
            Storm storm = new Storm(stack, config.concurrency());
            if (!config.sabotaged().isEmpty()) {
                storm.idleLimit(SABOTAGE_IDLE_LIMIT);
            }
            Storm.Report report = storm.run(plan, config.seed(), () -> {
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
                        if (lines.size() != 1 || !isClientCancel(lines.getFirst())) {
                            missed.add("decode-" + (d + 1) + ": " + abbreviate(lines.toString()));
                        }
                    }
                    probeAnswers.put(id, missed);
                }
                after[0] = figures ? ttftMillis(gateways.get(0), stack, shortPrompt, TTFT_SAMPLES, "after") : 0;
            });
            List<String> lost = new ArrayList<>();
            probeAnswers.forEach((id, where) -> {
                if (!where.isEmpty()) {
                    lost.add(id + " " + where);
                }
            });
            Summary.Steady steadySummary = new Summary.Steady(steady.sent(), steady.completed(),
                    steady.wrongOutputs(), steady.withoutAnswer(), steady.errors());
            FaultsVerdict.Evidence evidence = evidence(config, schedule, report, steady, lost, probeAnswers.size(),
                    instances);
            return new Summary(config, schedule.injected(), schedule.skipped(), report, lost, probeAnswers.size(),
                    idle, chunk, after[0], steadySummary, evidence, FaultsVerdict.gates(evidence));
        }
    }

    /** What the gates read, from the storm's report, the steady load, the schedule and the probes. */
    private static FaultsVerdict.Evidence evidence(Config config, FaultSchedule schedule, Storm.Report report,
                                                   SteadyLoad steady, List<String> lost, long probes,
                                                   TestStacks.Instances instances) {
        List<FaultsVerdict.ErrorAnswer> errors = new ArrayList<>(report.errorAnswers());
        errors.addAll(steady.errorAnswers());
        List<String> withoutTerminal = new ArrayList<>(report.noAnswer());
        for (FaultsVerdict.ErrorAnswer e : errors) {
            if (e.kind().equals(Storm.NO_ANSWER) && !e.requestId().startsWith("steady-")) {
                continue; // already among the storm's noAnswer, with what each side saw
            }
            if (e.kind().equals(Storm.NO_ANSWER) || e.kind().equals("200 no [DONE]")) {
                withoutTerminal.add(e.requestId() + " (" + e.kind() + ")");
            }
        }
        // Coverage: every request a gateway answered with 200 (storm and steady load, within the audit's window)
        // must be among the gateways' ADMITTED events the audit read, as often as it was answered.
        Map<String, Long> answered = new TreeMap<>(report.answeredByClientId());
        steady.answeredSince(report.from()).forEach(id -> answered.merge(id, 1L, Long::sum));
        Map<String, Long> admitted = report.audit().admittedByClientId();
        List<String> unseen = new ArrayList<>();
        answered.forEach((id, n) -> {
            long seen = admitted.getOrDefault(id, 0L);
            if (seen < n) {
                unseen.add(id + " x " + (n - seen));
            }
        });
        List<FaultsVerdict.Unverifiable> unverifiable = report.audit().unverifiableItems().stream()
                .map(u -> new FaultsVerdict.Unverifiable(u.requestId(), u.invariant(), u.instance())).toList();
        List<FaultsVerdict.FaultWindow> windows = schedule.injected().stream()
                .map(i -> new FaultsVerdict.FaultWindow(i.fault(), i.target(), i.from(), i.to(), i.evidence()))
                .toList();
        return new FaultsVerdict.Evidence(config.faults(), windows, schedule.skipped(), errors,
                report.reuse().abortedUncancelled() + steady.strayAborts(), withoutTerminal,
                report.partialNotPrefix() + steady.partialNotPrefix(), report.wrongOutputs() + steady.wrongOutputs(),
                report.audit().ran(), report.audit().violations(), unverifiable, unseen, report.metricsAbsent(),
                report.leaks(), report.workersIdle(), probes, lost, report.operatorCancelsUnsent(),
                config.concurrency() + STEADY_CONCURRENCY);
    }

    /**
     * Publishes one marker cancel on every partition of the cancellations topic and waits until every decode worker
     * has handled each partition up to its marker ({@code ripcord_cancel_consumed_offset}): a worker reads each
     * partition in order, so it has then read every record published there before the marker (the probes among
     * them). Markers name fresh internal IDs no request uses. Offsets, not a count of records consumed: a worker that
     * restarted replays the topic's window, and a count would be reached by the replay before the markers.
     */
    private static void awaitDecodesReadTheTopic(String bootstrap, TestStack stack, int decodes) {
        String topic = "ripcord.cancellations";
        Map<Integer, Long> markerOffsets = new TreeMap<>();
        try (KafkaProducer<String, String> operator = FaultSchedule.operator(bootstrap)) {
            int partitions = operator.partitionsFor(topic).size();
            for (int p = 0; p < partitions; p++) {
                String id = RequestIds.internalId("marker-" + p);
                markerOffsets.put(p, operator.send(new ProducerRecord<>(topic, p, id, FaultSchedule.cancelEvent(id)))
                        .get(60, TimeUnit.SECONDS).offset());
            }
        } catch (Exception e) {
            throw new IllegalStateException("the markers after the faults were not acknowledged: " + e, e);
        }
        Awaitility.await("every decode worker read the cancellations topic up to the markers " + markerOffsets)
                .atMost(PROBE_LIMIT).pollInterval(Duration.ofMillis(100))
                .until(() -> java.util.stream.IntStream.range(0, decodes).allMatch(d -> {
                    Prometheus metrics = Prometheus.scrape(stack.url(dev.ripcord.stack.Role.DECODE, d));
                    return markerOffsets.entrySet().stream().allMatch(m -> metrics.samples(
                            "ripcord_cancel_consumed_offset", "partition", String.valueOf(m.getKey())).stream()
                            .anyMatch(sample -> sample.value() >= m.getValue()));
                }));
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

    /**
     * Whether {@code line} is decode's typed cancel of a client's cancel, the probe's own: {@code type} CANCELLED and
     * {@code reason} CLIENT_CANCEL, parsed, not searched for.
     */
    static boolean isClientCancel(String line) {
        try {
            tools.jackson.databind.JsonNode node = JsonMapper.builder().build().readTree(line);
            return "CANCELLED".equals(node.path("type").asString()) && "CLIENT_CANCEL".equals(
                    node.path("reason").asString());
        } catch (RuntimeException notJson) {
            return false;
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
