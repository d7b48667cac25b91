package dev.ripcord.stack.storm;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import dev.ripcord.engine.SamplingParams;
import dev.ripcord.protocol.WorkerStatus;
import dev.ripcord.stack.ReferenceEngine;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.Journal;
import dev.ripcord.stack.cancel.Prometheus;
import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import dev.ripcord.stack.storm.StormPlan.Entry;
import dev.ripcord.stack.storm.StormPlan.Phase;
import dev.ripcord.stack.storm.StormPlan.Source;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import tools.jackson.databind.node.ObjectNode;

/**
 * The random-phase cancel storm: many requests across every gateway of a stack, a share of them
 * cancelled at a phase, by a source and at a gateway drawn from a seed ({@link StormPlan}); then the checks:
 * every request that completed carries exactly the single-process reference engine's text, every cancelled stream's
 * partial text is a prefix of it, every worker is back to idle (no page, session, registration or extra region
 * left), the gateways hold no request or leg, and the lifecycle audit ({@link LifecycleOracle}) finds no violation.
 *
 * <p>Two API keys send the storm and reuse its IDs ({@link StormPlan}): a share of requests are sent again under
 * their ID once they ended, right after a cancel included, and a share have a twin under the other key at the same
 * time. Nobody cancels a reuse, so each must complete with the reference text; and no request nobody cancelled may
 * be answered as cancelled: not a reuse, not a twin whose other key's request was cancelled, not one whose
 * operator record on {@code ripcord.cancellations} names the client's ID (workers know requests by the gateway's
 * internal ID only, so such a record reaches no request).
 *
 * <p>Used by {@code StormIT} (a few hundred requests, in CI) and {@code StormBench} ({@code ./ripcord bench storm},
 * 10,000 by default). The propagation mode is the stack's ({@code ripcord.cancel.propagation}): one storm runs on one
 * mode; the bench's {@code --propagation} picks it.
 */
final class Storm {

    private static final Duration REQUEST_LIMIT = Duration.ofMinutes(3);
    private static final Duration IDLE_LIMIT = Duration.ofSeconds(120);
    /** How long the checks wait for every worker to go idle ({@link #IDLE_LIMIT} unless {@link #idleLimit} says). */
    private Duration idleLimit = IDLE_LIMIT;
    /** Events reach the log about 100 ms after they are emitted (docs/lifecycles.md); a heartbeat follows 1 s later. */
    private static final Duration AUDIT_SETTLE = Duration.ofSeconds(2);

    private final TestStack stack;
    private final int concurrency;
    /** Per key (0: the stack's, 1: {@link TestStacks#SECOND_API_KEY}), a client per gateway. */
    private final List<List<StreamingClient>> clients = List.of(new ArrayList<>(), new ArrayList<>());
    private final List<String> prompts = new ArrayList<>();
    private final Map<String, ReferenceEngine.Generation> references = new ConcurrentHashMap<>();
    /** Explicit cancels still waiting for their answer: joined before the report. */
    private final java.util.Queue<Thread> explicitCancels = new java.util.concurrent.ConcurrentLinkedQueue<>();

    /**
     * A shorter wait for the workers to go idle, for a run that expects one not to (a sabotage that keeps a page):
     * the wait is the leak's only price, and every request has been answered by then.
     */
    Storm idleLimit(Duration limit) {
        this.idleLimit = limit;
        return this;
    }

    Storm(TestStack stack, int concurrency) {
        this.stack = stack;
        this.concurrency = concurrency;
        for (int i = 0; i < stack.instances().gateways(); i++) {
            clients.get(0).add(new StreamingClient(stack.url(Role.GATEWAY, i)));
            clients.get(1).add(new StreamingClient(stack.url(Role.GATEWAY, i), TestStacks.SECOND_API_KEY));
        }
        for (int bytes : StormPlan.PROMPT_BYTES) {
            prompts.add(ofBytes(bytes));
        }
    }

    /** What runs after the last request and before the checks. */
    @FunctionalInterface
    interface BeforeChecks {
        void run() throws InterruptedException;
    }

    /** What one request came to. */
    enum Result { COMPLETED, CANCELLED, FAILED }

    /** Everything a storm measured; {@link #print} writes it, {@link #clean()} says whether every check passed. */
    record Report(int requests, long seed, int concurrency, String topology, String propagation,
                  Map<Phase, Long> planned, Map<Source, Long> plannedSources, Map<String, Long> results,
                  Map<String, Long> failures, Map<Integer, Long> explicitAnswers, long completedAfterCancel,
                  long wrongOutputs, List<String> wrongExamples, long partialNotPrefix, long uncancelledNotCompleted,
                  Map<String, WorkerStatus> workers, boolean workersIdle, double gatewayActive, double gatewayLegs,
                  LifecycleOracle.Verdict audit, double wallSeconds, long completedTokens,
                  List<String> noAnswer, Reuse reuse, List<FaultsVerdict.ErrorAnswer> errorAnswers,
                  Map<String, Long> answeredByClientId, long operatorCancelsUnsent, List<String> metricsAbsent,
                  Instant from) {

        /**
         * The IDs used twice: requests sent again once they ended ({@code afterCancel} of them right after a cancel,
         * {@code duplicateRetries}: times the gateway still held the ended request and answered 409
         * {@code duplicate_request_id}, which a client retries), requests that shared their ID with the other key's
         * at the same time, and {@code abortedUncancelled}: requests nobody cancelled that were answered as
         * cancelled (examples in {@code examples}).
         */
        record Reuse(long sent, long afterCancel, long completed, long duplicateRetries, long twins,
                     long abortedUncancelled, List<String> examples) {
        }

        long leaks() {
            long leaks = 0;
            for (WorkerStatus s : workers.values()) {
                leaks += s.livePages() + s.liveSessions() + s.liveRegistrations() + Math.max(0, s.liveRegions() - 1);
            }
            return leaks + (long) gatewayActive + (long) gatewayLegs;
        }

        boolean clean() {
            return wrongOutputs == 0 && partialNotPrefix == 0 && uncancelledNotCompleted == 0 && failures.isEmpty()
                    && reuse.abortedUncancelled() == 0 && workersIdle && leaks() == 0 && audit.ran() && audit.violations() == 0;
        }

        void print(PrintStream out) {
            out.printf("storm: %d requests, seed %d, concurrency %d, %s, propagation %s%n", requests, seed, concurrency,
                    topology, propagation);
            out.println("  cancels aimed, by phase:  " + planned);
            out.println("  cancels aimed, by source: " + plannedSources);
            out.println("  outcomes: " + results + " (completed although a cancel was aimed at them: "
                    + completedAfterCancel + ")");
            out.println("  explicit cancel answers (HTTP status: count; 0: no connection): " + explicitAnswers);
            out.println("  failures (neither completed nor cancelled): " + (failures.isEmpty() ? "0" : failures));
            if (!noAnswer.isEmpty()) {
                out.println("  requests whose client got no answer (id gateway phase source): " + noAnswer);
            }
            out.println("  uncancelled requests that did not complete: " + uncancelledNotCompleted);
            out.println("  IDs reused: " + reuse.sent() + " sent again once ended (" + reuse.afterCancel()
                    + " right after a cancel, " + reuse.completed() + " completed, " + reuse.duplicateRetries()
                    + " retries of a 409 duplicate_request_id), " + reuse.twins()
                    + " sent by both keys at once");
            out.println("  requests nobody cancelled answered as cancelled: " + reuse.abortedUncancelled()
                    + (reuse.examples().isEmpty() ? "" : " e.g. " + reuse.examples()));
            out.println("  wrong outputs (completed text != reference): " + wrongOutputs
                    + (wrongExamples.isEmpty() ? "" : " e.g. " + wrongExamples));
            out.println("  cancelled requests whose partial text is not a prefix of the reference: " + partialNotPrefix);
            workers.forEach((name, s) -> out.printf(
                    "  %-10s livePages %d, liveSessions %d, liveRegistrations %d, liveRegions %d (1 = the page pool), "
                            + "queued %d, running %d%n", name, s.livePages(), s.liveSessions(),
                    s.liveRegistrations(), s.liveRegions(), s.queued(), s.running()));
            out.println("  workers back to idle: " + (workersIdle ? "yes" : "NO"));
            out.printf("  gateways: requests active %.0f, legs linked %.0f%n", gatewayActive, gatewayLegs);
            out.println("  leaks (pages + sessions + registrations + extra regions + gateway requests/legs): "
                    + leaks());
            out.println("  audit (ripcord audit over the storm's window): " + (audit.ran() ? audit.requests()
                    + " requests, " + audit.violations() + " violations; " + audit.summary()
                    : "NOT RUN: " + audit.summary()));
            out.printf("  throughput: %.1f requests/s, %.0f completion tokens/s of completed requests (%.1f s wall)%n",
                    requests / wallSeconds, completedTokens / wallSeconds, wallSeconds);
            out.println("  verdict: " + (clean() ? "CLEAN" : "NOT CLEAN"));
        }
    }

    /** Runs {@code plan} to the end, then the checks. */
    Report run(StormPlan plan, long seed) throws InterruptedException {
        return run(plan, seed, () -> { });
    }

    /**
     * Runs {@code plan} to the end, then {@code beforeChecks} (a fault schedule's end: every process back, the
     * probes sent), then the checks, whose audit window covers both.
     */
    Report run(StormPlan plan, long seed, BeforeChecks beforeChecks) throws InterruptedException {
        // References first (in this JVM, outside the timed part): one per prompt and length.
        for (int p = 0; p < prompts.size(); p++) {
            for (int maxTokens : StormPlan.MAX_TOKENS) {
                reference(p, maxTokens);
            }
        }
        Map<String, Long> results = new ConcurrentHashMap<>();
        Map<String, Long> failures = new ConcurrentHashMap<>();
        Map<Integer, Long> explicitAnswers = new ConcurrentHashMap<>();
        LongAdder completedAfterCancel = new LongAdder();
        LongAdder wrong = new LongAdder();
        LongAdder partialNotPrefix = new LongAdder();
        LongAdder uncancelledNotCompleted = new LongAdder();
        AtomicLong completedTokens = new AtomicLong();
        List<String> wrongExamples = java.util.Collections.synchronizedList(new ArrayList<>());
        List<String> noAnswer = java.util.Collections.synchronizedList(new ArrayList<>());
        LongAdder reuses = new LongAdder();
        LongAdder reusesAfterCancel = new LongAdder();
        LongAdder reusesCompleted = new LongAdder();
        LongAdder duplicateRetries = new LongAdder();
        LongAdder abortedUncancelled = new LongAdder();
        List<String> abortedExamples = java.util.Collections.synchronizedList(new ArrayList<>());
        List<FaultsVerdict.ErrorAnswer> errorAnswers = java.util.Collections.synchronizedList(new ArrayList<>());
        Map<String, Long> answeredByClientId = new ConcurrentHashMap<>();
        LongAdder operatorUnsent = new LongAdder();
        Semaphore slots = new Semaphore(concurrency);
        Instant from = Instant.now();
        long start = System.nanoTime();
        try (KafkaProducer<String, String> operator = operatorProducer(stack.bootstrapServers());
             ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (Entry entry : plan.entries()) {
                slots.acquire();
                threads.submit(() -> {
                    AtomicReference<Call> call = new AtomicReference<>();
                    AtomicReference<Thread> explicitCancel = new AtomicReference<>();
                    String gateway = "gateway-" + (entry.gateway() + 1);
                    Instant sent = Instant.now();
                    try {
                        Outcome outcome = one(entry, operator, operatorUnsent, explicitAnswers, call, explicitCancel);
                        ReferenceEngine.Generation expected = reference(entry.promptIndex(), entry.maxTokens());
                        Result result = classify(outcome, entry.stream());
                        answered(outcome, entry.id(), answeredByClientId);
                        if (!cancelled(entry) && result == Result.CANCELLED) {
                            abortedUncancelled.increment();
                            if (abortedExamples.size() < 5) {
                                abortedExamples.add(entry.id() + " (key " + entry.tenant() + ")");
                            }
                        }
                        results.merge(result.name(), 1L, Long::sum);
                        switch (result) {
                            case COMPLETED -> {
                                completedTokens.addAndGet(expected.completionTokens());
                                if (entry.phase() != Phase.NONE) {
                                    completedAfterCancel.increment();
                                }
                                if (!outcome.text().equals(expected.text())) {
                                    wrong.increment();
                                    if (wrongExamples.size() < 3) {
                                        wrongExamples.add(entry.id());
                                    }
                                }
                            }
                            case CANCELLED -> {
                                // The partial answer of an abort (streamed or not) is what was generated so far; an
                                // abort flushes the start of a multi-byte character it held back, which decodes as
                                // U+FFFD where the full text has the whole character.
                                String partial = outcome.text().replaceAll("\uFFFD+$", "");
                                if (!expected.text().startsWith(partial)) {
                                    partialNotPrefix.increment();
                                }
                            }
                            case FAILED -> {
                                failures.merge(outcome.status() + " " + abbreviate(outcome.error()), 1L, Long::sum);
                                errorAnswers.add(new FaultsVerdict.ErrorAnswer(entry.id(), gateway, kind(outcome), sent,
                                        Instant.now()));
                                if (!expected.text().startsWith(outcome.text().replaceAll("\uFFFD+$", ""))) {
                                    partialNotPrefix.increment();
                                }
                            }
                        }
                        if (!cancelled(entry) && result != Result.COMPLETED) {
                            uncancelledNotCompleted.increment();
                        }
                        if (entry.reuse()) {
                            // The client knows its request ended and its cancel was answered: it uses the ID again.
                            Thread cancel = explicitCancel.get();
                            if (cancel != null) {
                                cancel.join();
                            }
                            reuses.increment();
                            if (result == Result.CANCELLED) {
                                reusesAfterCancel.increment();
                            }
                            Instant sentAgain = Instant.now();
                            Outcome again = again(entry, duplicateRetries);
                            Result second = classify(again, entry.stream());
                            answered(again, entry.id(), answeredByClientId);
                            results.merge(second.name(), 1L, Long::sum);
                            switch (second) {
                                case COMPLETED -> {
                                    reusesCompleted.increment();
                                    completedTokens.addAndGet(expected.completionTokens());
                                    if (!again.text().equals(expected.text())) {
                                        wrong.increment();
                                        if (wrongExamples.size() < 3) {
                                            wrongExamples.add(entry.id() + " (reused)");
                                        }
                                    }
                                }
                                case CANCELLED -> {
                                    abortedUncancelled.increment();
                                    uncancelledNotCompleted.increment();
                                    if (abortedExamples.size() < 5) {
                                        abortedExamples.add(entry.id() + " (key " + entry.tenant() + ", reused)");
                                    }
                                }
                                case FAILED -> {
                                    uncancelledNotCompleted.increment();
                                    failures.merge(again.status() + " " + abbreviate(again.error()), 1L, Long::sum);
                                    errorAnswers.add(new FaultsVerdict.ErrorAnswer(entry.id(), gateway, kind(again),
                                            sentAgain, Instant.now()));
                                }
                            }
                        }
                    } catch (Exception e) {
                        failures.merge("client: " + e, 1L, Long::sum);
                        errorAnswers.add(new FaultsVerdict.ErrorAnswer(entry.id(), gateway, NO_ANSWER, sent,
                                Instant.now()));
                        noAnswer.add(entry.id() + " gateway-" + (entry.gateway() + 1) + " " + entry.phase() + " "
                                + entry.source() + (entry.stream() ? " stream" : "") + " (" + seen(entry, call.get())
                                + ")");
                    } finally {
                        slots.release();
                    }
                });
            }
        }
        double wall = (System.nanoTime() - start) / 1e9;
        for (Thread cancel : explicitCancels) {
            cancel.join(Duration.ofMinutes(1));
        }
        beforeChecks.run();
        Map<String, WorkerStatus> workers = new TreeMap<>();
        boolean idle = awaitIdle(workers);
        // The audit window ends a moment after the workers went idle, and is read once that moment has passed: the
        // last lifecycle events (pages freed, sessions released) leave each service's publisher queue after the
        // state they describe, and a record stamped after the window's end would not be read.
        Instant to = Instant.now().plus(AUDIT_SETTLE);
        Thread.sleep(AUDIT_SETTLE.plusSeconds(1));
        double active = 0;
        double legs = 0;
        List<String> metricsAbsent = new ArrayList<>();
        for (int i = 0; i < stack.instances().gateways(); i++) {
            Prometheus metrics = Prometheus.scrape(stack.url(Role.GATEWAY, i));
            // A gauge the gateway does not export reads as absent, never as 0: a leak it would count must not pass.
            for (String gauge : new String[] {"ripcord_gateway_requests_active", "ripcord_gateway_legs_linked"}) {
                if (metrics.samples(gauge).isEmpty()) {
                    metricsAbsent.add("gateway-" + (i + 1) + " " + gauge);
                }
            }
            active += metrics.sum("ripcord_gateway_requests_active");
            legs += metrics.sum("ripcord_gateway_legs_linked");
        }
        Map<Phase, Long> planned = new EnumMap<>(Phase.class);
        Map<Source, Long> sources = new EnumMap<>(Source.class);
        for (Entry e : plan.entries()) {
            planned.merge(e.phase(), 1L, Long::sum);
            if (e.phase() != Phase.NONE) {
                sources.merge(e.source(), 1L, Long::sum);
            }
        }
        String topology = "%d gateways, %d prefill, %d decode, preset %s".formatted(stack.instances().gateways(),
                stack.instances().prefills(), stack.instances().decodes(), stack.preset().id());
        long twins = plan.entries().stream().map(Entry::id).distinct().count();
        twins = plan.entries().size() - twins;
        return new Report(plan.entries().size() + (int) reuses.sum(), seed, concurrency, topology,
                stack.properties().getOrDefault("ripcord.cancel.propagation", "both"), planned, sources,
                new TreeMap<>(results), new TreeMap<>(failures), new TreeMap<>(explicitAnswers),
                completedAfterCancel.sum(), wrong.sum(), List.copyOf(wrongExamples), partialNotPrefix.sum(),
                uncancelledNotCompleted.sum(), workers, idle, active, legs,
                LifecycleOracle.audit(stack.bootstrapServers(), from, to, TestStacks.repositoryRoot()
                        .resolve("local-stack/target/storm-" + seed + "-audit.dump")), wall, completedTokens.get(),
                List.copyOf(noAnswer), new Report.Reuse(reuses.sum(), reusesAfterCancel.sum(),
                        reusesCompleted.sum(), duplicateRetries.sum(), twins, abortedUncancelled.sum(),
                        List.copyOf(abortedExamples)), List.copyOf(errorAnswers), new TreeMap<>(answeredByClientId),
                operatorUnsent.sum(), metricsAbsent, from);
    }

    /**
     * Whether anyone cancels this request: a cancel is aimed at it, and not by an operator's record, which names the
     * client's ID and so reaches no request.
     */
    private static boolean cancelled(Entry entry) {
        return entry.phase() != Phase.NONE && entry.source() != Source.OPERATOR;
    }

    /**
     * {@code entry} sent again under its ID and key, uncancelled, once it ended; the gateway may still be closing the
     * ended request (a disconnect it has not seen yet), which it answers with 409 {@code duplicate_request_id}: a
     * client retries that, as this one does (counted in {@code retries}), for up to {@link #REQUEST_LIMIT}.
     */
    private Outcome again(Entry entry, LongAdder retries) throws Exception {
        ObjectNode body = StreamingClient.completion(stack.modelName(), prompts.get(entry.promptIndex()),
                entry.maxTokens(), entry.stream());
        StreamingClient gateway = clients.get(entry.tenant()).get(entry.gateway());
        long deadline = System.nanoTime() + REQUEST_LIMIT.toNanos();
        while (true) {
            Outcome outcome = gateway.start(body, entry.id()).outcome().get(REQUEST_LIMIT.toSeconds(),
                    TimeUnit.SECONDS);
            if (outcome.status() != 409 || outcome.error() == null
                    || !outcome.error().contains("duplicate_request_id") || System.nanoTime() > deadline) {
                return outcome;
            }
            retries.increment();
            Thread.sleep(20);
        }
    }

    /**
     * What the client, the gateway it sent to and the workers know of a request that got no answer in time: the
     * call's state, the gateway's request object ({@code GET /v1/requests/{id}}: its state and phase) and each
     * worker's journal events for it, so that a report says where it stopped.
     */
    private String seen(Entry entry, Call call) {
        String client = call == null ? "not sent" : call.describe();
        String gateway;
        try {
            var request = clients.get(entry.tenant()).get(entry.gateway()).request(entry.id());
            gateway = request == null ? "404" : request.toString();
        } catch (RuntimeException e) {
            gateway = e.toString();
        }
        StringBuilder workers = new StringBuilder();
        for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
            int n = role == Role.PREFILL ? stack.instances().prefills() : stack.instances().decodes();
            for (int i = 0; i < n; i++) {
                String events;
                try {
                    events = Journal.since(stack.url(role, i), 0).events(entry.id()).toString();
                } catch (AssertionError | RuntimeException e) {
                    events = e.getMessage(); // the ring moved on, or the worker did not answer
                }
                workers.append("; ").append(role.shortName()).append('-').append(i + 1).append(": ").append(events);
            }
        }
        return "client: " + client + "; gateway: " + gateway + workers;
    }

    /** One request, its cancel, and its outcome; {@code started} receives the call as soon as it is sent. */
    private Outcome one(Entry entry, KafkaProducer<String, String> operator, LongAdder operatorUnsent,
            Map<Integer, Long> explicitAnswers,
            AtomicReference<Call> started, AtomicReference<Thread> explicitCancel) throws Exception {
        ObjectNode body = StreamingClient.completion(stack.modelName(), prompts.get(entry.promptIndex()),
                entry.maxTokens(), entry.stream());
        if (entry.phase() != Phase.NONE && entry.source() == Source.DEADLINE) {
            double seconds = switch (entry.phase()) {
                case QUEUED -> 0.001;
                case AFTER_COMPLETION -> 600; // a deadline after the end is no deadline
                // The API takes a deadline of more than 0 s: a drawn delay of 0 is the shortest one it takes.
                default -> Math.max(0.001, entry.delayMicros() / 1e6);
            };
            body.put("timeout", seconds);
        }
        List<StreamingClient> gateways = clients.get(entry.tenant());
        Call call = gateways.get(entry.gateway()).start(body, entry.id());
        started.set(call);
        if (entry.phase() == Phase.NONE || entry.source() == Source.DEADLINE) {
            return call.outcome().get(REQUEST_LIMIT.toSeconds(), TimeUnit.SECONDS);
        }
        switch (entry.phase()) {
            case QUEUED -> { }
            case MID_CHUNK, MID_TRANSFER, AWAITING_KV -> sleepMicros(entry.delayMicros());
            case DECODING -> {
                if (entry.stream()) {
                    // Never more than the request streams: a request that ends first releases the wait.
                    java.util.concurrent.CompletableFuture.anyOf(call.textEvents(entry.afterTokens()), call.outcome())
                            .get(REQUEST_LIMIT.toSeconds(), TimeUnit.SECONDS);
                } else {
                    sleepMicros(entry.delayMicros());
                }
            }
            case AFTER_COMPLETION -> call.outcome().get(REQUEST_LIMIT.toSeconds(), TimeUnit.SECONDS);
            case NONE -> throw new IllegalStateException("no cancel");
        }
        switch (entry.source()) {
            case DISCONNECT -> call.disconnect();
            case EXPLICIT -> {
                // Its answer may take the relay's answer timeout (404 from a gateway that does not hold it): off the
                // request's thread, so that the request's own outcome is not held up.
                StreamingClient at = gateways.get(entry.cancelGateway());
                Thread cancel = Thread.ofVirtual().unstarted(() -> {
                    int status;
                    try {
                        status = entry.delete() ? at.delete(entry.id()) : at.cancel(entry.id());
                    } catch (java.io.UncheckedIOException e) {
                        status = 0; // no answer: the gateway was down (a fault bench restarts one)
                    }
                    explicitAnswers.merge(status, 1L, Long::sum);
                });
                explicitCancel.set(cancel);
                explicitCancels.add(cancel);
                cancel.start();
            }
            // Its send result is checked: a cancel never published is counted, not taken as sent.
            case OPERATOR -> operator.send(new ProducerRecord<>("ripcord.cancellations", entry.id(),
                    operatorCancel(entry.id())), (metadata, failure) -> {
                        if (failure != null) {
                            operatorUnsent.increment();
                        }
                    });
            case DEADLINE -> throw new IllegalStateException("handled above");
        }
        return call.outcome().get(REQUEST_LIMIT.toSeconds(), TimeUnit.SECONDS);
    }

    /** The kind of a request that got no answer within its deadline (the client gave up waiting). */
    static final String NO_ANSWER = "no answer";

    /**
     * Strictly: completed, ended on its own ({@code stop}/{@code length}; a stream with its {@code [DONE]});
     * cancelled, answered as the API answers a cancelled request ({@code finish_reason: "abort"} with the partial
     * text; a stream with its {@code [DONE]}), or we closed the connection ourselves. Anything else is a failure,
     * whatever its status or message: a 409, a 504 or a "timeout" is not a cancel (the API answers none of them to a
     * cancel), and a stream that ended without {@code [DONE]} got no terminal answer.
     */
    static Result classify(Outcome outcome, boolean stream) {
        if (outcome.disconnected()) {
            return Result.CANCELLED;
        }
        if (stream && !outcome.sawDone()) {
            return Result.FAILED;
        }
        if (outcome.completed()) {
            return Result.COMPLETED;
        }
        return outcome.aborted() ? Result.CANCELLED : Result.FAILED;
    }

    /**
     * The kind of a failed answer: the HTTP status and the OpenAI error's {@code code}; for a connection that failed,
     * {@code transport} and the exception's class; for an error event in a stream that began (status 200),
     * {@code stream} and its code; for a 200 stream cut short, {@code 200 no [DONE]}.
     */
    static String kind(Outcome outcome) {
        if (outcome.transportError() != null || outcome.status() <= 0) {
            String t = String.valueOf(outcome.transportError());
            // The HTTP client's future wraps the cause (a refused connection): the kind is the cause's.
            String wrapper = "java.util.concurrent.CompletionException: ";
            while (t.startsWith(wrapper)) {
                t = t.substring(wrapper.length());
            }
            int colon = t.indexOf(':');
            String type = colon < 0 ? t : t.substring(0, colon);
            return "transport " + type.substring(type.lastIndexOf('.') + 1);
        }
        if (outcome.status() == 200) {
            // An error after the stream began: the status was already 200; the error event carries the code.
            return outcome.error() != null ? "stream " + errorCode(outcome.error()) : "200 no [DONE]";
        }
        return outcome.status() + " " + errorCode(outcome.error());
    }

    private static String errorCode(String error) {
        if (error == null) {
            return "no error body";
        }
        try {
            tools.jackson.databind.JsonNode node = tools.jackson.databind.json.JsonMapper.builder().build()
                    .readTree(error);
            tools.jackson.databind.JsonNode e = node.has("error") ? node.get("error") : node;
            return e.path("code").isString() ? e.path("code").asString() : "no code";
        } catch (RuntimeException notJson) {
            return "not JSON";
        }
    }

    /**
     * Counts {@code outcome} under its client ID when the gateway answered it with 200 (completed or aborted): the
     * gateway admitted it, so the lifecycle log must hold it.
     */
    private static void answered(Outcome outcome, String clientId, Map<String, Long> answeredByClientId) {
        if (!outcome.disconnected() && outcome.status() == 200) {
            answeredByClientId.merge(clientId, 1L, Long::sum);
        }
    }

    private ReferenceEngine.Generation reference(int promptIndex, int maxTokens) {
        return references.computeIfAbsent(promptIndex + "/" + maxTokens, k ->
                stack.reference().generate(prompts.get(promptIndex), maxTokens, true, SamplingParams.greedy()));
    }

    /**
     * Waits until every worker holds nothing (what {@link TestStack#awaitWorkersIdle()} checks), recording each
     * one's last status; false if one still holds something after the idle limit ({@link #IDLE_LIMIT}).
     */
    private boolean awaitIdle(Map<String, WorkerStatus> last) throws InterruptedException {
        long deadline = System.nanoTime() + idleLimit.toNanos();
        while (true) {
            boolean idle = true;
            for (Role role : new Role[] {Role.PREFILL, Role.DECODE}) {
                int n = role == Role.PREFILL ? stack.instances().prefills() : stack.instances().decodes();
                for (int i = 0; i < n; i++) {
                    WorkerStatus s = (role == Role.PREFILL ? stack.workers(i, 0) : stack.workers(0, i)).status(role);
                    last.put(role.shortName() + "-" + (i + 1), s);
                    idle &= s.livePages() == 0 && s.liveSessions() == 0 && s.liveRegistrations() == 0
                            && s.liveRegions() == 1 && s.queued() == 0 && s.running() == 0;
                }
            }
            if (idle) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(100);
        }
    }

    private static KafkaProducer<String, String> operatorProducer(String bootstrap) {
        Properties config = new Properties();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        config.put(ProducerConfig.CLIENT_ID_CONFIG, "ripcord-storm-operator");
        return new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
    }

    /** The cancellations topic's wire format (docs/architecture.md), as an operator's tool writes it. */
    private static String operatorCancel(String requestId) {
        return "{\"schemaVersion\":1,\"requestId\":\"" + requestId + "\",\"reason\":\"CLIENT_CANCEL\","
                + "\"origin\":{\"service\":\"operator\",\"instance\":\"storm\"},\"timestamp\":\"" + Instant.now()
                + "\"}";
    }

    private static void sleepMicros(long micros) throws InterruptedException {
        Thread.sleep(Duration.ofNanos(micros * 1000));
    }

    private static String abbreviate(String s) {
        if (s == null) {
            return "";
        }
        return s.length() > 160 ? s.substring(0, 160) + "..." : s;
    }

    /** ASCII text of exactly {@code bytes} bytes (one token per byte on the byte tokenizer, plus BOS). */
    static String ofBytes(int bytes) {
        String text = "The quick brown fox jumps over the lazy dog while the cat watches. ";
        StringBuilder s = new StringBuilder(bytes);
        while (s.length() < bytes) {
            s.append(text);
        }
        String prompt = s.substring(0, bytes);
        assert prompt.getBytes(StandardCharsets.UTF_8).length == bytes;
        return prompt;
    }
}
