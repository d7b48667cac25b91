package dev.ripcord.stack.cancel;

import static dev.ripcord.stack.cancel.CancelStacks.STORM_ATTACH_TIMEOUT;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_DECODE_BATCH;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_ENGINE_BATCH;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_JOURNAL;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_KV_PAGES;
import static dev.ripcord.stack.cancel.CancelStacks.STORM_QUEUE;
import static dev.ripcord.stack.cancel.CancelStacks.TCP_BACKEND;
import static dev.ripcord.stack.cancel.CancelStacks.TWO_RUNNING;
import static dev.ripcord.stack.cancel.CancelStacks.VECTOR_KERNELS;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;

import dev.ripcord.engine.SamplingParams;
import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.ReferenceEngine.Generation;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Hundreds of concurrent requests, most of them abandoned at random moments (before the gateway has even read them,
 * while queued for prefill, mid-prefill, while their KV is in flight, mid-decode), some cancelled explicitly, some
 * left alone. Afterwards nothing may be left (no page, session or registration), every abort must have been
 * counted exactly once per worker, no request that was left alone may have been aborted, and every one of those must
 * have produced exactly the single-process reference output.
 *
 * <p>Randomized on purpose (concurrency code is tested by hammering interleavings); the plan's seed is printed so
 * that a failing plan can be replayed, though the timing of course cannot. With the tiny model a prompt spends
 * microseconds in prefill and seconds in the queue, so random disconnects rarely land mid-prefill; that phase is
 * covered deterministically by {@link CancelPhasesIT} and {@link BugReportScenarioIT}. The storm asserts that
 * it reached the queue, the KV transfer and the decode batch.
 */
@LocalStackTest(properties = {
        // Decode commits prompt + max_tokens up front: 500 requests of up to 12 pages each must all fit.
        STORM_KV_PAGES,
        STORM_QUEUE,
        // Two prompts in prefill at once, interleaved chunk by chunk: cancels land in a round-robin, too.
        TWO_RUNNING,
        // Hundreds admitted at decode at once, so that hundreds of prompts queue at prefill.
        STORM_DECODE_BATCH,
        STORM_ENGINE_BATCH,
        // Regression guard: prefill used to attach a prompt's send session only when the prompt started, so a prompt
        // queued longer than the attach timeout failed at decode with ATTACH_TIMEOUT although nobody cancelled it.
        // The storm queues hundreds of prompts at once (tens of seconds of queue); a timeout well below that makes such
        // a failure likely to show here. Not much shorter: under heavy load the gateway alone can take 5 s between
        // decode's reservation and prefill's admission, and a left-alone request then fails honestly.
        STORM_ATTACH_TIMEOUT,
        // Every event of the storm must still be in the journal when it is read.
        STORM_JOURNAL,
        // The storm's KV goes over TCP (KvBackendIT checks it on this stack); every other stack's over shared memory.
        TCP_BACKEND,
        // Its engine at full speed: hundreds of prompts queue at once.
        VECTOR_KERNELS})
class AbortStormIT {

    private static final int REQUESTS = 500;
    private static final int CONCURRENCY = 500;
    private static final int MAX_DELAY_MILLIS = 4000;

    /** What the client does to a request. */
    enum Fate {
        /** Left alone: must complete with exactly the reference output. */
        NEVER,
        /** Disconnects right after sending: the gateway may not have read it yet. */
        AT_ONCE,
        /** Disconnects after a random delay: lands in whatever phase the request is in by then. */
        AFTER_DELAY,
        /** Disconnects after a random number of streamed pieces of text: mid-decode. */
        AFTER_TOKENS,
        /** {@code POST /v1/requests/{id}/cancel} after a random delay, while the client keeps listening. */
        EXPLICIT
    }

    record Plan(String id, String prompt, int maxTokens, boolean stream, Fate fate, int delayMillis, int afterTokens) {
    }

    @Test
    void abortStormLeavesNothingHeldCountsEachAbortOnceAndKeepsSurvivorsExact(TestStack stack) throws Exception {
        Endpoints endpoints = Endpoints.of(stack);
        endpoints.awaitWorkersIdle();
        long seed = System.nanoTime();
        System.out.println("abort storm plan seed: " + seed);
        List<Plan> plans = plan(new Random(seed));
        Map<String, Generation> reference = new HashMap<>();
        for (Plan plan : plans) {
            reference.put(plan.id(), stack.reference().generate(plan.prompt(), plan.maxTokens(), true,
                    SamplingParams.greedy()));
        }
        long prefillMark = Journal.mark(endpoints.prefill());
        long decodeMark = Journal.mark(endpoints.decode());
        long prefillAbortsBefore = endpoints.status(Role.PREFILL).aborts();
        long decodeAbortsBefore = endpoints.status(Role.DECODE).aborts();
        double prefillCountedBefore = cancellationsCounted(endpoints, Role.PREFILL);
        double decodeCountedBefore = cancellationsCounted(endpoints, Role.DECODE);

        Map<String, Outcome> outcomes = storm(endpoints, plans);
        endpoints.awaitWorkersIdle();

        // ---- Survivors are exact; the abandoned got an error or a prefix of the right answer. ----
        Map<Fate, Integer> completedByFate = new EnumMap<>(Fate.class);
        for (Plan plan : plans) {
            Outcome outcome = outcomes.get(plan.id());
            Generation expected = reference.get(plan.id());
            if (plan.fate() == Fate.NEVER) {
                assertThat(outcome.completed()).as("left alone, so it must complete: %s", outcome).isTrue();
            }
            if (outcome.completed()) {
                completedByFate.merge(plan.fate(), 1, Integer::sum);
                assertThat(outcome.text()).as("%s (%s) equals the reference", plan.id(), plan.fate())
                        .isEqualTo(expected.text());
                assertThat(outcome.finishReason()).isEqualTo("length");
            } else {
                assertThat(expected.text()).as("what %s (%s) received before it ended is a prefix of the reference",
                        plan.id(), plan.fate()).startsWith(outcome.text());
            }
        }

        // ---- Every abort counted exactly once per worker, and only for requests that were cancelled. ----
        Journal p = Journal.since(endpoints.prefill(), prefillMark);
        Journal d = Journal.since(endpoints.decode(), decodeMark);
        Set<String> leftAlone = plans.stream().filter(pl -> pl.fate() == Fate.NEVER).map(Plan::id)
                .collect(Collectors.toSet());
        Set<String> prefillAborted = exactlyOnceEach(p, Set.of("STOPPED", "REMOVED_FROM_QUEUE",
                "CANCELLED_AT_ADMISSION"), "prefill");
        Set<String> decodeAborted = exactlyOnceEach(d, Set.of("STOPPED", "CANCELLED_AT_ADMISSION"), "decode");
        for (Journal journal : List.of(p, d)) {
            assertThat(journal.countsBy("CANCEL_OBSERVED"::equals)).as("one abort handler run per request")
                    .allSatisfy((id, n) -> assertThat(n).as(id).isEqualTo(1));
            assertThat(journal.idsWith("CANCEL_OBSERVED"::equals)).as("no request left alone was cancelled")
                    .doesNotContainAnyElementsOf(leftAlone);
        }
        // Decode's abort while awaiting KV has no record of its own: it is a cancel observed that never finished.
        Set<String> decodeCancelledUnfinished = difference(d.idsWith("CANCEL_OBSERVED"::equals),
                d.idsWith("FINISHED"::equals));
        assertThat(decodeCancelledUnfinished).containsAll(decodeAborted);
        assertThat(difference(p.idsWith("CANCEL_OBSERVED"::equals), p.idsWith(e -> e.equals("DONE")
                || e.equals("FAILED")))).as("prefill: cancelled and not finished = aborted").isEqualTo(prefillAborted);

        long prefillAborts = endpoints.status(Role.PREFILL).aborts() - prefillAbortsBefore;
        long decodeAborts = endpoints.status(Role.DECODE).aborts() - decodeAbortsBefore;
        assertThat(prefillAborts).as("prefill aborts = distinct requests it aborted").isEqualTo(prefillAborted.size());
        assertThat(decodeAborts).as("decode aborts = distinct requests it aborted")
                .isEqualTo(decodeCancelledUnfinished.size());
        assertThat(cancellationsCounted(endpoints, Role.PREFILL) - prefillCountedBefore)
                .as("ripcord_cancellations_total at prefill").isEqualTo(prefillAborts);
        assertThat(cancellationsCounted(endpoints, Role.DECODE) - decodeCountedBefore)
                .as("ripcord_cancellations_total at decode").isEqualTo(decodeAborts);

        // ---- Every job ended exactly once and every page was freed exactly once. ----
        Set<String> prefillEnds = Set.of("DONE", "STOPPED", "REMOVED_FROM_QUEUE", "CANCELLED_AT_ADMISSION", "FAILED");
        assertThat(p.countsBy(prefillEnds::contains)).as("one end per prefill job")
                .allSatisfy((id, n) -> assertThat(n).as(id).isEqualTo(1))
                .containsOnlyKeys(union(p.idsWith("QUEUED"::equals), p.idsWith("CANCELLED_AT_ADMISSION"::equals)));
        assertThat(p.countsBy("FREED"::equals)).as("prefill pages freed once per started job")
                .allSatisfy((id, n) -> assertThat(n).as(id).isEqualTo(1))
                .containsOnlyKeys(p.idsWith("STARTED"::equals));
        assertThat(d.countsBy("FREED"::equals)).as("decode pages freed once per reservation")
                .allSatisfy((id, n) -> assertThat(n).as(id).isEqualTo(1))
                .containsOnlyKeys(d.idsWith("RESERVED"::equals));
        Prometheus gateway = Prometheus.scrape(endpoints.gateway());
        assertThat(gateway.sum("ripcord_gateway_requests_active")).isZero();
        assertThat(gateway.sum("ripcord_gateway_legs_linked")).isZero();

        Map<String, Long> phases = new TreeMap<>();
        p.entries().stream().filter(e -> Set.of("STOPPED", "REMOVED_FROM_QUEUE", "CANCELLED_AT_ADMISSION")
                .contains(e.event())).forEach(e -> phases.merge("prefill " + e.event(), 1L, Long::sum));
        d.entries().stream().filter(e -> Set.of("STOPPED", "CANCELLED_AT_ADMISSION").contains(e.event()))
                .forEach(e -> phases.merge("decode " + e.event(), 1L, Long::sum));
        phases.put("decode aborted awaiting KV", (long) difference(decodeCancelledUnfinished, decodeAborted).size());
        System.out.printf("abort storm: %d requests, completed by fate %s, aborts prefill %d decode %d, %s%n",
                plans.size(), completedByFate, prefillAborts, decodeAborts, phases);
        // The storm is only worth its cost if it reached the phases it is meant to hammer.
        assertThat(phases).as("aborts reached queued prompts, KV transfers and decode batches")
                .containsKeys("prefill REMOVED_FROM_QUEUE", "decode STOPPED")
                .hasEntrySatisfying("decode aborted awaiting KV", n -> assertThat(n).isPositive());
    }

    private static List<Plan> plan(Random random) {
        List<Plan> plans = new ArrayList<>(REQUESTS);
        Fate[] fates = Fate.values();
        for (int i = 0; i < REQUESTS; i++) {
            // Tiny's context is 512 tokens; 16-token chunks and 32-token pages: up to 25 chunks and 13 pages.
            int bytes = 8 + random.nextInt(380);
            int maxTokens = 2 + random.nextInt(31);
            boolean stream = random.nextInt(5) != 0;
            Fate fate = i % 5 == 0 ? Fate.NEVER : fates[1 + random.nextInt(fates.length - 1)];
            if (fate == Fate.AFTER_TOKENS && !stream) {
                fate = Fate.AFTER_DELAY;
            }
            plans.add(new Plan("storm-" + i + "-" + Long.toHexString(random.nextLong()),
                    Texts.ofBytes(bytes, random.nextInt(200)), maxTokens, stream, fate,
                    random.nextInt(MAX_DELAY_MILLIS), 1 + random.nextInt(maxTokens)));
        }
        return plans;
    }

    /** Runs every plan, at most {@link #CONCURRENCY} at once, and returns how each ended. */
    private static Map<String, Outcome> storm(Endpoints endpoints, List<Plan> plans) throws Exception {
        StreamingClient client = new StreamingClient(endpoints.gateway());
        Semaphore slots = new Semaphore(CONCURRENCY);
        Map<String, CompletableFuture<Outcome>> outcomes = new HashMap<>();
        try (ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor()) {
            for (Plan plan : plans) {
                slots.acquire();
                Call call = client.start(StreamingClient.completion(endpoints.model(), plan.prompt(),
                        plan.maxTokens(), plan.stream()), plan.id());
                call.outcome().whenComplete((o, e) -> slots.release());
                outcomes.put(plan.id(), call.outcome());
                switch (plan.fate()) {
                    case NEVER -> { }
                    case AT_ONCE -> call.disconnect();
                    case AFTER_DELAY -> timer.schedule(call::disconnect, plan.delayMillis(), TimeUnit.MILLISECONDS);
                    case AFTER_TOKENS -> call.textEvents(plan.afterTokens()).thenRun(call::disconnect);
                    // The cancel call blocks for its answer: on a virtual thread, not on the timer.
                    case EXPLICIT -> timer.schedule(() -> Thread.startVirtualThread(() -> client.cancel(plan.id())),
                            plan.delayMillis(), TimeUnit.MILLISECONDS);
                }
            }
            try {
                CompletableFuture.allOf(outcomes.values().toArray(CompletableFuture[]::new)).get(3, TimeUnit.MINUTES);
            } catch (TimeoutException e) {
                throw new AssertionError(stuck(endpoints, plans, outcomes), e);
            }
        }
        return outcomes.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().join()));
    }

    /** What every call that has not ended was doing, with both workers' journals for it: the timeout's story. */
    private static String stuck(Endpoints endpoints, List<Plan> plans, Map<String, CompletableFuture<Outcome>> outcomes) {
        Journal p = Journal.since(endpoints.prefill(), 0);
        Journal d = Journal.since(endpoints.decode(), 0);
        StringBuilder story = new StringBuilder("calls still open after 3 minutes:");
        for (Plan plan : plans) {
            if (!outcomes.get(plan.id()).isDone()) {
                story.append("%n  %s fate=%s stream=%s max=%d%n    prefill %s%n    decode  %s".formatted(plan.id(),
                        plan.fate(), plan.stream(), plan.maxTokens(), p.events(plan.id()), d.events(plan.id())));
            }
        }
        story.append("%nprefill %s%ndecode %s".formatted(endpoints.status(Role.PREFILL),
                endpoints.status(Role.DECODE)));
        return story.toString();
    }

    /** IDs with an entry in {@code events}; fails if any has more than one. */
    private static Set<String> exactlyOnceEach(Journal journal, Set<String> events, String worker) {
        Map<String, Long> counts = journal.countsBy(events::contains);
        assertThat(counts).as("%s: at most one abort record per request", worker)
                .allSatisfy((id, n) -> assertThat(n).as("%s: %s", id, journal.events(id)).isEqualTo(1));
        return counts.keySet();
    }

    private static double cancellationsCounted(Endpoints endpoints, Role role) {
        return Prometheus.scrape(endpoints.worker(role)).sum("ripcord_cancellations_total", "service",
                role.shortName());
    }

    private static Set<String> difference(Set<String> a, Set<String> b) {
        Set<String> out = new HashSet<>(a);
        out.removeAll(b);
        return out;
    }

    private static Set<String> union(Set<String> a, Set<String> b) {
        Set<String> out = new HashSet<>(a);
        out.addAll(b);
        return out;
    }
}
