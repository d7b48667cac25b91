package dev.ripcord.decode.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.kv.SessionState;
import dev.ripcord.prefill.scheduler.PrefillJob;
import dev.ripcord.protocol.Cancelled;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.worker.job.JobState;

/**
 * One cancel, placed at one phase of a request's life, coming from one source, carried by one propagation mode,
 * run through both workers in process ({@link TwoWorkers}), then checked: terminal state and reason/source on both
 * workers, journal order, exactly one abort per worker that was cancelled, and nothing leaked.
 *
 * <p>How the modes deliver (what {@code ripcord.cancel.propagation} makes the gateway and the workers do): in-band,
 * the gateway tells each worker whose leg is still open ({@code IN_BAND}, decode's leg first); Kafka, every worker's
 * consumer applies the record ({@code KAFKA}); both, in-band first and the Kafka copy after (a replay).
 */
record CancelScenario(Phase phase, Source source, Mode mode, int promptTokens, int maxTokens) {

    /** Where in the request's life the cancel lands. */
    enum Phase {
        /**
         * Decode's KV pool is committed to other requests: the request waits in decode's admission queue, has no
         * pages and no session, and no prefill leg (the gateway starts prefill only after decode's RESERVED).
         */
        WAITING_FOR_CAPACITY,
        /** Prefill has submitted and connected; the prompt waits in its queue. */
        QUEUED,
        /** Prefill has just submitted; its send session may still be connecting. */
        CONNECTING,
        /** While prefill computes a chunk (the cancel lands when the chunk is journalled, before anyone looks). */
        MID_CHUNK,
        /** Between two chunks of the prompt. */
        BETWEEN_CHUNKS,
        /** After the last chunk, while prefill completes the transfer. */
        TRANSFER_IN_FLIGHT,
        /** Prefill is done; decode has not taken the KV in yet. */
        AWAITING_KV,
        /** The sequence is in decode's batch. */
        DECODING,
        /** Both workers are done with the request. */
        AFTER_COMPLETION
    }

    /** Where the cancel comes from, and so its reason. */
    enum Source {
        DISCONNECT(CancelReason.CLIENT_DISCONNECT),
        EXPLICIT(CancelReason.CLIENT_CANCEL),
        DEADLINE(CancelReason.DEADLINE),
        STALLED(CancelReason.CLIENT_STALLED),
        /** Only prefill hears the cancel; decode can learn it only from prefill's typed abort of the transfer. */
        UPSTREAM(CancelReason.CLIENT_CANCEL),
        /** The Kafka record is applied, then replayed (a consumer restart, an operator replaying the topic). */
        KAFKA_REPLAY(CancelReason.CLIENT_DISCONNECT),
        /** The Kafka record arrives before the request does: both workers hold a tombstone when it registers. */
        TOMBSTONE(CancelReason.DEADLINE);

        final CancelReason reason;

        Source(CancelReason reason) {
            this.reason = reason;
        }
    }

    /** {@code ripcord.cancel.propagation}. */
    enum Mode { IN_BAND, KAFKA, BOTH }

    /**
     * Why this combination cannot happen, or null when it can. Said here, and reported as a skip with this reason,
     * never dropped silently.
     */
    String meaningless() {
        if ((source == Source.KAFKA_REPLAY || source == Source.TOMBSTONE) && mode == Mode.IN_BAND) {
            return source + " needs Kafka: in-band-only propagation has no record to replay or to keep";
        }
        if (source == Source.UPSTREAM && phase == Phase.WAITING_FOR_CAPACITY) {
            return "UPSTREAM is a cancel only prefill hears: while decode has not reserved, no prefill leg exists";
        }
        if (source == Source.TOMBSTONE && phase != Phase.QUEUED) {
            return "a tombstone is a cancel that arrived before the request: it has no later phase (run as QUEUED)";
        }
        return null;
    }

    /** What happened, for the assertions. */
    record Outcome(JobState prefill, JobState decode, long prefillAborts, long decodeAborts) {
    }

    Outcome run(TwoWorkers w, String id) {
        // The scenarios' prompts are alike and their phases name chunks: each runs on a cold prefix cache, as on a
        // fresh prefill worker (what the cache keeps after a cancel is PrefixCacheTest's and PrefillSchedulerTest's).
        w.prefillEngine.clearPrefixCache();
        long prefillAbortsBefore = w.prefill.aborts();
        long decodeAbortsBefore = w.decode.aborts();
        if (source == Source.TOMBSTONE) {
            deliverKafka(w, id, true, true);
            TwoWorkers.Request request = w.reserve(id, promptTokens, maxTokens);
            w.runUntilQuiet();
            assertThat(request.decodeJob.state()).isEqualTo(JobState.CANCELLED);
            assertThat(request.decodeJob.cancelRequest().source()).isEqualTo(CancelSource.TOMBSTONE);
            assertThat(TwoWorkers.events(w.decodeJournal, id)).containsExactly("CANCEL_OBSERVED",
                    "CANCELLED_AT_ADMISSION");
            assertThat(request.decodeEvents).containsExactly(new Cancelled(source.reason, CancelSource.TOMBSTONE));
            assertThat(request.decodeEnded).isTrue();
            assertNothingLeaked(w);
            return new Outcome(null, JobState.CANCELLED, w.prefill.aborts() - prefillAbortsBefore,
                    w.decode.aborts() - decodeAbortsBefore);
        }
        if (phase == Phase.WAITING_FOR_CAPACITY) {
            return runWaitingForCapacity(w, id, prefillAbortsBefore, decodeAbortsBefore);
        }
        TwoWorkers.Request request = w.reserve(id, promptTokens, maxTokens);
        PrefillJob prefillJob = request.startPrefill();
        switch (phase) {
            case CONNECTING -> deliver(w, request);
            case QUEUED -> {
                w.waitFor("the sender to attach", () -> request.decodeJob.session.state() != SessionState.OPEN);
                deliver(w, request);
            }
            case MID_CHUNK -> {
                w.prefillJournal.onRecord(e -> {
                    if (e.requestId().equals(id) && e.event().equals("CHUNK") && e.detail().equals("0")) {
                        deliver(w, request);
                    }
                });
                try {
                    w.stepPrefillUntil("the first chunk", () -> journalled(w, id, "CHUNK"));
                } finally {
                    w.prefillJournal.onRecord(null);
                }
            }
            case BETWEEN_CHUNKS -> {
                w.stepPrefillUntil("the first chunk", () -> journalled(w, id, "CHUNK"));
                deliver(w, request);
            }
            case TRANSFER_IN_FLIGHT -> {
                int chunks = (promptTokens + TwoWorkers.CHUNK_TOKENS - 1) / TwoWorkers.CHUNK_TOKENS;
                w.stepPrefillUntil("the last chunk", () -> TwoWorkers.entries(w.prefillJournal, id).stream()
                        .anyMatch(e -> e.event().equals("CHUNK") && e.detail().equals(Integer.toString(chunks - 1))));
                deliver(w, request);
            }
            case AWAITING_KV -> {
                w.stepPrefillUntil("prefill to finish", () -> prefillJob.state().isTerminal());
                deliver(w, request);
            }
            case DECODING -> {
                w.runUntil("the sequence to join the batch", () -> request.decodeJob.state() == JobState.RUNNING);
                w.decodeLoop().runOnce(); // one decode step with it
                deliver(w, request);
            }
            case AFTER_COMPLETION -> {
                w.runUntil("both jobs to end", () -> prefillJob.state().isTerminal()
                        && request.decodeJob.state().isTerminal());
                deliver(w, request);
            }
        }
        w.runUntilQuiet();
        Outcome outcome = new Outcome(prefillJob.state(), request.decodeJob.state(),
                w.prefill.aborts() - prefillAbortsBefore, w.decode.aborts() - decodeAbortsBefore);
        check(w, request, prefillJob, outcome);
        return outcome;
    }

    /**
     * Commits every page of decode's pool to requests that wait for KV which never comes, submits this one (it
     * waits in the admission queue), cancels it there, then cancels the blockers: it ends CANCELLED, was never
     * reserved nor sent to prefill, and nothing is left.
     */
    private Outcome runWaitingForCapacity(TwoWorkers w, String id, long prefillAbortsBefore,
                                          long decodeAbortsBefore) {
        List<TwoWorkers.Request> blockers = fillDecodePool(w, id);
        java.util.concurrent.CompletableFuture<DecodeJob> admitted = w.decode.submit(
                new dev.ripcord.protocol.DecodeRequest(id, promptTokens, maxTokens,
                        new dev.ripcord.protocol.Sampling(0, 1, 42), true));
        w.decodeLoop().runUntilIdle(1000);
        assertThat(admitted).as("waits for pages").isNotDone();
        assertThat(w.decode.queuedForPages()).isEqualTo(1);
        boolean decodeHears = true;
        if (mode != Mode.KAFKA) {
            w.decodeRegistry.cancel(id, source.reason, CancelSource.IN_BAND); // prefill has no leg to tell
        }
        if (mode != Mode.IN_BAND) {
            deliverKafka(w, id, decodeHears, true);
            if (source == Source.KAFKA_REPLAY) {
                deliverKafka(w, id, decodeHears, true);
            }
        }
        w.decodeLoop().runUntilIdle(1000);
        DecodeJob job = admitted.join();
        long decodeAborts = w.decode.aborts() - decodeAbortsBefore;
        List<DecodeEvent> events = new ArrayList<>();
        job.events().subscribe(events::add);
        w.decodeLoop().runUntilIdle(1000);
        for (TwoWorkers.Request blocker : blockers) {
            w.decodeRegistry.cancel(blocker.id, CancelReason.CLIENT_CANCEL, CancelSource.IN_BAND);
        }
        w.runUntilQuiet();

        assertThat(job.state()).isEqualTo(JobState.CANCELLED);
        assertThat(job.cancelRequest().reason()).isEqualTo(source.reason);
        assertThat(job.cancelRequest().source()).isEqualTo(firstSource());
        assertThat(events).containsExactly(new Cancelled(source.reason, firstSource()));
        assertThat(w.decodeRegistry.isCancelled(id)).isTrue();
        assertThat(decodeAborts).isEqualTo(1);
        List<String> journal = TwoWorkers.events(w.decodeJournal, id);
        assertThat(journal).startsWith("QUEUED").doesNotContain("RESERVED", "FREED");
        checkJournal(TwoWorkers.entries(w.decodeJournal, id), JobState.CANCELLED,
                Set.of("REMOVED_FROM_QUEUE", "TRANSFER_ABORTED", "STOPPED", "CANCELLED_AT_ADMISSION"), "RESERVED",
                "FINISHED");
        assertThat(journal).contains("REMOVED_FROM_QUEUE");
        assertThat(w.prefill.aborts() - prefillAbortsBefore).as("prefill never had it").isZero();
        assertNothingLeaked(w);
        return new Outcome(null, JobState.CANCELLED, 0, decodeAborts);
    }

    /** Reserves requests (whose KV never comes) at decode until its pool has no uncommitted page left. */
    static List<TwoWorkers.Request> fillDecodePool(TwoWorkers w, String prefix) {
        int contextPages = TwoWorkers.DECODE_POOL_PAGES / TwoWorkers.CONTEXT_PAGES;
        List<TwoWorkers.Request> blockers = new ArrayList<>();
        for (int i = 0; i < contextPages; i++) {
            // prompt + max_tokens = the whole context: one context's worth of pages committed each
            blockers.add(w.reserve(prefix + "-blocker-" + i, 1, TwoWorkers.CONTEXT_TOKENS - 1));
        }
        assertThat(w.decode.queuedForPages()).isZero();
        return blockers;
    }

    private static boolean journalled(TwoWorkers w, String id, String event) {
        return TwoWorkers.events(w.prefillJournal, id).contains(event);
    }

    /** The cancel, as the mode carries it. */
    private void deliver(TwoWorkers w, TwoWorkers.Request request) {
        boolean decodeHears = source != Source.UPSTREAM;
        if (mode != Mode.KAFKA) {
            // In band: the gateway tells the workers whose legs are still open.
            if (decodeHears && !request.decodeEnded) {
                w.decodeRegistry.cancel(request.id, source.reason, CancelSource.IN_BAND);
            }
            if (request.prefillJob != null && !request.prefillEnded) {
                w.prefillRegistry.cancel(request.id, source.reason, CancelSource.IN_BAND);
            }
        }
        if (mode != Mode.IN_BAND) {
            deliverKafka(w, request.id, decodeHears, true);
            if (source == Source.KAFKA_REPLAY) {
                deliverKafka(w, request.id, decodeHears, true);
            }
        }
    }

    private void deliverKafka(TwoWorkers w, String id, boolean decode, boolean prefill) {
        if (decode) {
            w.decodeRegistry.cancel(id, source.reason, CancelSource.KAFKA);
        }
        if (prefill) {
            w.prefillRegistry.cancel(id, source.reason, CancelSource.KAFKA);
        }
    }

    private CancelSource firstSource() {
        return mode == Mode.KAFKA ? CancelSource.KAFKA : CancelSource.IN_BAND;
    }

    private void check(TwoWorkers w, TwoWorkers.Request request, PrefillJob prefillJob, Outcome o) {
        String id = request.id;
        // ---- terminal states ----
        switch (phase) {
            case QUEUED, CONNECTING, MID_CHUNK, BETWEEN_CHUNKS -> assertThat(o.prefill()).isEqualTo(JobState.CANCELLED);
            // The transfer's completion races the cancel over the network: either ending is correct.
            case TRANSFER_IN_FLIGHT -> assertThat(o.prefill()).isIn(JobState.CANCELLED, JobState.DONE);
            case AWAITING_KV, DECODING, AFTER_COMPLETION -> assertThat(o.prefill()).isEqualTo(JobState.DONE);
        }
        JobState expectedDecode = phase == Phase.AFTER_COMPLETION ? JobState.DONE
                : source == Source.UPSTREAM ? o.prefill() // decode learns it only from prefill's abort
                : JobState.CANCELLED;
        assertThat(o.decode()).isEqualTo(expectedDecode);

        // ---- reason and source on both workers ----
        if (o.prefill() == JobState.CANCELLED) {
            assertThat(prefillJob.cancelRequest().reason()).isEqualTo(source.reason);
            // Decode's typed abort may reach prefill before the gateway's signal does.
            assertThat(prefillJob.cancelRequest().source()).isIn(firstSource(), CancelSource.UPSTREAM);
            assertThat(request.prefillEvents).last().isEqualTo(new Cancelled(source.reason,
                    prefillJob.cancelRequest().source()));
            assertThat(w.prefillRegistry.isCancelled(id)).isTrue();
        }
        if (o.decode() == JobState.CANCELLED) {
            CancelSource expected = source == Source.UPSTREAM ? CancelSource.UPSTREAM : firstSource();
            assertThat(request.decodeJob.cancelRequest().reason()).isEqualTo(source.reason);
            assertThat(request.decodeJob.cancelRequest().source()).isEqualTo(expected);
            assertThat(request.decodeEvents).last().isEqualTo(new Cancelled(source.reason, expected));
            assertThat(w.decodeRegistry.isCancelled(id)).as("registration reported cancelled").isTrue();
        } else {
            assertThat(request.decodeEvents).last().isInstanceOfSatisfying(DecodeEvent.Token.class,
                    t -> assertThat(t.finishReason()).isEqualTo("length"));
        }
        assertThat(request.prefillEnded).as("prefill stream ended").isTrue();
        assertThat(request.decodeEnded).as("decode stream ended").isTrue();

        // ---- exactly one abort per cancelled job ----
        assertThat(o.prefillAborts()).isEqualTo(o.prefill() == JobState.CANCELLED ? 1 : 0);
        assertThat(o.decodeAborts()).isEqualTo(o.decode() == JobState.CANCELLED ? 1 : 0);

        // ---- journal order ----
        checkJournal(TwoWorkers.entries(w.prefillJournal, id), o.prefill(),
                Set.of("REMOVED_FROM_QUEUE", "STOPPED", "CANCELLED_AT_ADMISSION"), "STARTED", "DONE");
        checkJournal(TwoWorkers.entries(w.decodeJournal, id), o.decode(),
                Set.of("TRANSFER_ABORTED", "STOPPED", "CANCELLED_AT_ADMISSION"), "RESERVED", "FINISHED");
        if (phase == Phase.DECODING && o.decode() == JobState.CANCELLED) {
            // The sequence leaves the batch at the step after the one during which its cancel was observed, or,
            // when that step had only cancelled sequences, inside it, at a layer boundary.
            List<JournalEntry> d = TwoWorkers.entries(w.decodeJournal, id);
            long observed = step(d.stream().filter(e -> e.event().equals("CANCEL_OBSERVED")).findFirst().orElseThrow());
            JournalEntry stopped = d.stream().filter(e -> e.event().equals("STOPPED")).findFirst().orElseThrow();
            long left = step(stopped);
            if (stopped.detail().contains(" layer=")) {
                assertThat(left).as("stopped inside the step it was observed in: %s", stopped).isEqualTo(observed);
            } else {
                assertThat(left).as("left the batch at the next step").isEqualTo(observed + 1);
            }
        }
        assertNothingLeaked(w);
    }

    /** The {@code step=N} of a decode journal entry. */
    static long step(JournalEntry e) {
        String detail = e.detail();
        return Long.parseLong(detail.substring(detail.indexOf("step=") + 5).trim());
    }

    /**
     * A cancelled job: one CANCEL_OBSERVED, then exactly one end among {@code cancelEnds}, nothing but its own
     * chunk/token bookkeeping in between, and FREED last (once) when it had pages. A job done: its done event once,
     * no cancel end, FREED last when it had pages.
     */
    static void checkJournal(List<JournalEntry> entries, JobState state, Set<String> cancelEnds,
                                     String hadPages, String doneEvent) {
        List<String> events = new ArrayList<>(entries.stream().map(JournalEntry::event).toList());
        long ends = events.stream().filter(cancelEnds::contains).count();
        if (state == JobState.CANCELLED) {
            assertThat(events.stream().filter("CANCEL_OBSERVED"::equals).count()).as("%s", events).isEqualTo(1);
            assertThat(ends).as("one abort record: %s", events).isEqualTo(1);
            int observed = events.indexOf("CANCEL_OBSERVED");
            int end = indexOfAny(events, cancelEnds);
            assertThat(observed).as("cancel observed before the abort: %s", events).isLessThan(end);
            assertThat(events.subList(observed, end).stream().filter("CHUNK"::equals).count())
                    .as("at most one chunk after the cancel: %s", events).isLessThanOrEqualTo(1);
            assertThat(events).as("%s", events).doesNotContain(doneEvent);
        } else {
            assertThat(ends).as("%s", events).isZero();
            assertThat(events.stream().filter(doneEvent::equals).count()).as("%s", events).isEqualTo(1);
        }
        if (events.contains(hadPages)) {
            // Freed once, after the end, and last: after the transfer's outcome too (KV_FAILED, or KV_LANDED for KV
            // that landed as the cancel ended the job), even when the session was released before the engine loop
            // took that outcome in.
            assertThat(events.stream().filter("FREED"::equals).count()).as("freed once: %s", events).isEqualTo(1);
            int end = state == JobState.CANCELLED ? indexOfAny(events, cancelEnds) : events.indexOf(doneEvent);
            assertThat(events.indexOf("FREED")).as("freed after the end: %s", events).isGreaterThan(end);
            assertThat(events.getLast()).as("freed last: %s", events).isEqualTo("FREED");
        } else {
            assertThat(events).doesNotContain("FREED");
        }
    }

    private static int indexOfAny(List<String> events, Set<String> wanted) {
        for (int i = 0; i < events.size(); i++) {
            if (wanted.contains(events.get(i))) {
                return i;
            }
        }
        return -1;
    }

    static void assertNothingLeaked(TwoWorkers w) {
        assertThat(w.prefillEngine.pagePool().pagesLive()).as("prefill pages").isZero();
        assertThat(w.decodeEngine.pagePool().pagesLive()).as("decode pages").isZero();
        assertThat(w.prefillAgent.stats().liveSessions()).as("prefill sessions").isZero();
        assertThat(w.decodeAgent.stats().liveSessions()).as("decode sessions").isZero();
        assertThat(w.prefillAgent.stats().liveRegions()).as("prefill regions: the pool's only").isEqualTo(1);
        assertThat(w.decodeAgent.stats().liveRegions()).as("decode regions: the pool's only").isEqualTo(1);
        assertThat(w.prefillRegistry.liveRegistrations()).as("prefill registrations").isZero();
        assertThat(w.decodeRegistry.liveRegistrations()).as("decode registrations").isZero();
        assertThat(w.prefill.queued() + w.prefill.running()).isZero();
        assertThat(w.decode.awaitingKv() + w.decode.running() + w.decode.queuedForPages()).isZero();
    }
}
