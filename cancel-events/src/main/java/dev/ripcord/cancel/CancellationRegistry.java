package dev.ripcord.cancel;

import dev.ripcord.protocol.CancelSource;

import dev.ripcord.protocol.CancelReason;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

import dev.ripcord.protocol.InvalidRequestIdException;
import dev.ripcord.protocol.RequestIds;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place that turns cancellation signals from any source (Kafka, in-band, deadlines, shutdown) into exactly one
 * abort per registered request. Plain Java: no Spring, no threads of its own; usable from a unit test with
 * {@code new CancellationRegistry()}.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>{@link #register} a request with an {@link AbortHandler}; the owner completes the returned
 *       {@link Registration} when the request ends.</li>
 *   <li>{@link #cancel} any number of times, from any thread and source: the handler runs at most once, for the first
 *       cancel that finds the request live, on that caller's thread, and never while a registry lock is held.</li>
 *   <li>A cancel for an ID that is not registered is kept as a <em>tombstone</em>; registering that ID later aborts the
 *       new registration at once (handler source {@link CancelSource#TOMBSTONE}, run by the registering thread before
 *       {@code register} returns), and the returned handle reports {@link Registration#isCancelled()}.</li>
 *   <li>Replays change nothing: a cancel for an ID that is already cancelled (live-aborted, tombstoned, or aborted and
 *       completed) returns {@link CancelOutcome#ALREADY_CANCELLED} without a second abort.</li>
 *   <li>Request IDs match exactly ({@link RequestIds}); there is no prefix matching.</li>
 * </ul>
 *
 * <h2>What is remembered after completion</h2>
 * An aborted request's ID stays as a tombstone after its owner completes it, so the second copy of its cancel (the
 * in-band one and the Kafka one usually both arrive) is recognised as a replay. A request that completed <em>without</em>
 * being cancelled is forgotten at once: remembering every completed ID would cost memory per request, while
 * tombstones cost memory per cancel, which is far rarer. The price is that a cancel arriving after normal completion
 * leaves a tombstone nobody will claim; since IDs are unique per request it can never abort anything, and it ages
 * out like any tombstone.
 *
 * <h2>Tombstone bounds</h2>
 * Tombstones live at most {@link Options#tombstoneTtl()}, counted from the cancel's <em>publish</em> time when the
 * caller knows it ({@link #cancel(String, CancelReason, CancelSource, Instant)}: a Kafka record's), not from when this
 * process happened to consume it: a worker that restarts and replays the topic keeps a cancel published 9 minutes ago
 * for 1 more minute, not 10, and a cancel published longer than the TTL ago is {@link CancelOutcome#EXPIRED} (no
 * tombstone at all). The publish time is read once, against the wall clock, when the tombstone is born; its age from
 * then on is measured on the monotonic ticker. When more than {@link Options#tombstoneMaxSize()} are held,
 * the oldest (by creation) are evicted first. Both kinds of eviction are counted ({@code ripcord.cancel.tombstones.evicted}
 * with {@code cause=expired|size}). An expired tombstone is never honoured even before it is swept. Sweeping happens on
 * the callers' threads (no background thread): every register/cancel checks the head of a FIFO of tombstones, which is
 * O(1) when nothing is due.
 *
 * <h2>Design note</h2>
 * All per-ID decisions happen inside {@link ConcurrentHashMap#compute}, which serialises register, cancel and
 * completion for the same ID; the abort itself is decided by a CAS on the registration's {@link RegistrationState} and
 * run after {@code compute} has returned, so a slow or re-entrant abort handler holds no lock. The FIFO may still hold
 * tombstones that a registration has already consumed; they cost one node each until they reach the head.
 */
public final class CancellationRegistry {

    private static final Logger log = LoggerFactory.getLogger(CancellationRegistry.class);

    private static final int LEAKS_LISTED = 20;

    /**
     * Tombstone bounds.
     *
     * @param tombstoneTtl     how long an unclaimed cancel is kept
     * @param tombstoneMaxSize how many tombstones are kept at most; beyond that the oldest are evicted
     */
    public record Options(Duration tombstoneTtl, int tombstoneMaxSize) {

        public Options {
            Objects.requireNonNull(tombstoneTtl, "tombstoneTtl");
            Checks.requireArgument(tombstoneTtl.isPositive(), "tombstoneTtl must be positive, was %s", tombstoneTtl);
            Checks.requireArgument(tombstoneMaxSize > 0, "tombstoneMaxSize must be positive, was %d", tombstoneMaxSize);
        }

        /** Ten minutes (the default Kafka replay window) and 100 000 tombstones (a few MB at most). */
        public static Options defaults() {
            return new Options(Duration.ofMinutes(10), 100_000);
        }
    }

    private final ConcurrentHashMap<String, Slot> slots = new ConcurrentHashMap<>();
    private final ConcurrentLinkedQueue<Tombstone> tombstoneFifo = new ConcurrentLinkedQueue<>();
    private final AtomicInteger liveCount = new AtomicInteger();
    private final AtomicInteger tombstoneCount = new AtomicInteger();
    private final ReentrantLock sweepLock = new ReentrantLock();
    private final long ttlNanos;
    private final int maxTombstones;
    private final LongSupplier nanoTicker;
    private final InstantSource wallClock;
    private final RegistryMetrics metrics;

    public CancellationRegistry() {
        this(Options.defaults(), null);
    }

    public CancellationRegistry(Options options) {
        this(options, null);
    }

    /** @param meters where to publish metrics; null for none */
    public CancellationRegistry(Options options, MeterRegistry meters) {
        this(options, meters, System::nanoTime);
    }

    /** @param nanoTicker a {@link System#nanoTime()}-like clock; tests pass a manual one to age tombstones */
    public CancellationRegistry(Options options, MeterRegistry meters, LongSupplier nanoTicker) {
        this(options, meters, nanoTicker, InstantSource.system());
    }

    /**
     * @param nanoTicker a {@link System#nanoTime()}-like clock that ages tombstones
     * @param wallClock  the clock a cancel's publish time is compared with, once, when its tombstone is born; tests
     *                   pass one that moves with {@code nanoTicker}
     */
    public CancellationRegistry(Options options, MeterRegistry meters, LongSupplier nanoTicker,
                                InstantSource wallClock) {
        Objects.requireNonNull(options, "options");
        this.ttlNanos = options.tombstoneTtl().toNanos();
        this.maxTombstones = options.tombstoneMaxSize();
        this.nanoTicker = Objects.requireNonNull(nanoTicker, "nanoTicker");
        this.wallClock = Objects.requireNonNull(wallClock, "wallClock");
        this.metrics = new RegistryMetrics(meters, this);
    }

    /**
     * Registers a request. If a cancel for this ID is waiting as a tombstone, {@code onAbort} runs on this thread
     * before this method returns (source {@link CancelSource#TOMBSTONE}) and the handle is already cancelled; the
     * caller still owns the handle and must complete it.
     *
     * @throws InvalidRequestIdException       if the ID breaks {@link RequestIds}' rules
     * @throws DuplicateRegistrationException if the ID has a registration that has not been completed
     */
    public Registration register(String requestId, AbortHandler onAbort) {
        RequestIds.require(requestId);
        Objects.requireNonNull(onAbort, "onAbort");
        sweepIfDue();
        long now = nanoTicker.getAsLong();
        // What the remapping function saw and decided, for the work done after compute returns. The decision to
        // abort at once must be taken from here, never re-read from the registration's state afterwards: by then
        // a concurrent cancel may have moved a fresh LIVE registration to ABORTING and be running the abort itself.
        Slot[] previous = new Slot[1];
        CancelReason[] abortAtOnce = new CancelReason[1];
        LiveRegistration registration = (LiveRegistration) slots.compute(requestId, (id, existing) -> {
            previous[0] = existing;
            abortAtOnce[0] = switch (existing) {
                case null -> null;
                case Tombstone t when t.isExpired(now, ttlNanos) -> null;
                case Tombstone t -> t.reason;
                case LiveRegistration old when old.isClosed() && old.state().isCancelled() -> old.reason();
                case LiveRegistration old when old.isClosed() -> null;
                case LiveRegistration old -> throw new DuplicateRegistrationException(id);
            };
            return abortAtOnce[0] == null
                    ? LiveRegistration.live(id, onAbort, this)
                    : LiveRegistration.abortingFromTombstone(id, onAbort, this, abortAtOnce[0]);
        });
        metrics.registered();
        switch (previous[0]) {
            case null -> liveCount.incrementAndGet();
            case Tombstone t -> {
                // The tombstone left the map; its FIFO node is now stale and is skipped when it reaches the head.
                tombstoneCount.decrementAndGet();
                liveCount.incrementAndGet();
                if (abortAtOnce[0] == null) {
                    metrics.evicted(true);
                }
            }
            // An old, closed registration was still in the map (its complete() is a moment behind us): replaced,
            // so the live count is unchanged, and the old one's unregister() will find it gone.
            case LiveRegistration old -> {
            }
        }
        if (abortAtOnce[0] != null) {
            metrics.tombstoneHit();
            log.debug("register requestId={} met a cancel (reason={}); aborting at once", requestId, abortAtOnce[0]);
            runAbort(registration, abortAtOnce[0], CancelSource.TOMBSTONE);
        }
        return registration;
    }

    /**
     * Delivers one cancellation signal. If the request is live, this call aborts it: the handler runs on this thread
     * before return. Never throws for a replayed or late signal.
     *
     * @throws InvalidRequestIdException if the ID breaks {@link RequestIds}' rules
     */
    public CancelOutcome cancel(String requestId, CancelReason reason, CancelSource source) {
        return cancel(requestId, reason, source, null);
    }

    /**
     * {@link #cancel(String, CancelReason, CancelSource)} for a signal published at {@code publishedAt} (a Kafka
     * record's timestamp): a tombstone it leaves lives {@link Options#tombstoneTtl()} from then, not from now, and if
     * that lifetime is already over when it arrives, nothing is kept and nothing is aborted
     * ({@link CancelOutcome#EXPIRED}), not even a <em>live</em> request of that ID: a cancel that old is a replay (a
     * rebalance, a broker failover, {@code ripcord cancels replay}), and whatever it was meant for has been aborted
     * by its first delivery or has ended long ago. (Gateways address cancels to internal IDs that are never reused,
     * so a replay could only ever name the request it was for; this keeps a worker safe from any other producer.)
     * A publish time in the future (clock skew) counts as now.
     *
     * @param publishedAt when the signal was published; null for now
     */
    public CancelOutcome cancel(String requestId, CancelReason reason, CancelSource source, Instant publishedAt) {
        RequestIds.require(requestId);
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(source, "source");
        Checks.requireArgument(source != CancelSource.TOMBSTONE, "TOMBSTONE is not a signal source");
        sweepIfDue();
        long now = nanoTicker.getAsLong();
        long ageNanos = publishedAt == null ? 0
                : Math.max(0, Duration.between(publishedAt, wallClock.instant()).toNanos());
        // Born as old as the cancel already is: its FIFO position is by arrival, so an old arrival may expire before
        // the head does; it is never honoured once expired (isExpired is checked on every use) and is swept when it
        // reaches the head.
        long born = now - Math.min(ageNanos, ttlNanos);
        boolean expiredAtBirth = ageNanos >= ttlNanos;
        Slot[] previous = new Slot[1];
        Slot current = slots.compute(requestId, (id, existing) -> {
            previous[0] = existing;
            return switch (existing) {
                case null -> expiredAtBirth ? null : new Tombstone(id, reason, source, born);
                case Tombstone t when t.isExpired(now, ttlNanos) && expiredAtBirth -> t; // swept later, as before
                case Tombstone t when t.isExpired(now, ttlNanos) -> new Tombstone(id, reason, source, born);
                case Tombstone t -> t;
                case LiveRegistration live -> live;
            };
        });
        return switch (current) {
            case null -> CancelOutcome.EXPIRED;
            case Tombstone t when t.isExpired(now, ttlNanos) -> CancelOutcome.EXPIRED;
            case Tombstone t when t == previous[0] -> CancelOutcome.ALREADY_CANCELLED;
            case Tombstone t -> {
                if (previous[0] == null) {
                    tombstoneCount.incrementAndGet();
                } else {
                    metrics.evicted(true); // an expired one was replaced in place
                }
                addTombstone(t);
                log.debug("cancel requestId={} reason={} source={}: not registered, kept as tombstone",
                        requestId, reason, source);
                yield CancelOutcome.TOMBSTONED;
            }
            case LiveRegistration live when expiredAtBirth -> {
                log.debug("cancel requestId={} reason={} source={}: published longer than the tombstone TTL ago, "
                        + "a replay; the live request is not aborted", requestId, reason, source);
                yield CancelOutcome.EXPIRED;
            }
            case LiveRegistration live -> {
                if (live.tryStartAbort(reason, source)) {
                    runAbort(live, reason, source);
                    yield CancelOutcome.ABORTED;
                }
                yield live.state().isCancelled() ? CancelOutcome.ALREADY_CANCELLED : CancelOutcome.COMPLETED;
            }
        };
    }

    /**
     * Cancels every live registration, e.g. on shutdown. Returns how many this call aborted. Registrations made
     * concurrently may or may not be included.
     */
    public int cancelAll(CancelReason reason, CancelSource source) {
        int aborted = 0;
        for (Slot slot : slots.values()) {
            if (slot instanceof LiveRegistration live
                    && cancel(live.requestId(), reason, source) == CancelOutcome.ABORTED) {
                aborted++;
            }
        }
        return aborted;
    }

    /** Whether {@code requestId} is known to be cancelled (a cancelled registration or an unexpired tombstone). */
    public boolean isCancelled(String requestId) {
        return switch (slots.get(requestId)) {
            case null -> false;
            case Tombstone t -> !t.isExpired(nanoTicker.getAsLong(), ttlNanos);
            case LiveRegistration live -> live.state().isCancelled();
        };
    }

    /** Whether {@code requestId} has a registration that has not been completed (aborted or not). */
    public boolean isRegistered(String requestId) {
        return slots.get(requestId) instanceof LiveRegistration live && !live.isClosed();
    }

    /** Registrations not yet completed, whether aborted or not. Non-zero at the end of a test means a leak. */
    public int liveRegistrations() {
        return liveCount.get();
    }

    /** Tombstones held, after sweeping the expired ones. */
    public int tombstones() {
        sweepIfDue();
        return tombstoneCount.get();
    }

    /**
     * Throws {@link IllegalStateException} listing the IDs of registrations that were never completed. For tests
     * (see {@code dev.ripcord.cancel.testing.CancellationLeakExtension}, in this module's test-jar) and shutdown checks.
     */
    public void assertNoLiveRegistrations() {
        if (liveCount.get() == 0) {
            return;
        }
        List<String> leaked = new ArrayList<>();
        for (Slot slot : slots.values()) {
            if (slot instanceof LiveRegistration live && leaked.size() < LEAKS_LISTED) {
                leaked.add(live.toString());
            }
        }
        throw new IllegalStateException("%d registration(s) still live, never completed: %s%s".formatted(
                liveCount.get(), leaked, liveCount.get() > LEAKS_LISTED ? " ..." : ""));
    }

    /** Called once per registration by {@link LiveRegistration#complete()}. */
    void unregister(LiveRegistration registration, boolean completedNormally) {
        long now = nanoTicker.getAsLong();
        Tombstone[] created = new Tombstone[1];
        boolean[] removed = new boolean[1];
        slots.compute(registration.requestId(), (id, existing) -> {
            if (existing != registration) {
                return existing; // a newer registration of the same ID already replaced this one
            }
            removed[0] = true;
            if (completedNormally) {
                return null;
            }
            created[0] = new Tombstone(id, registration.reason(), registration.source(), now);
            return created[0];
        });
        if (removed[0]) {
            liveCount.decrementAndGet();
        }
        if (created[0] != null) {
            tombstoneCount.incrementAndGet();
            addTombstone(created[0]);
        }
        metrics.completed(completedNormally);
        log.debug("complete requestId={} normally={}", registration.requestId(), completedNormally);
    }

    private void runAbort(LiveRegistration registration, CancelReason reason, CancelSource source) {
        try {
            registration.handler().onAbort(registration.requestId(), reason, source);
        } catch (RuntimeException e) {
            metrics.abortFailed();
            log.warn("abort handler failed requestId={} reason={} source={}; the request still counts as aborted",
                    registration.requestId(), reason, source, e);
        } finally {
            registration.finishAbort();
            metrics.aborted(source);
        }
        log.debug("aborted requestId={} reason={} source={}", registration.requestId(), reason, source);
    }

    private void addTombstone(Tombstone tombstone) {
        tombstoneFifo.add(tombstone);
        metrics.tombstoneCreated();
        if (tombstoneCount.get() > maxTombstones) {
            sweepIfDue();
        }
    }

    private void sweepIfDue() {
        Tombstone head = tombstoneFifo.peek();
        if (head == null) {
            return;
        }
        long now = nanoTicker.getAsLong();
        if (!head.isExpired(now, ttlNanos) && tombstoneCount.get() <= maxTombstones) {
            return;
        }
        // One sweeper at a time; the others carry on instead of waiting (nothing here is urgent).
        if (!sweepLock.tryLock()) {
            return;
        }
        try {
            while ((head = tombstoneFifo.peek()) != null) {
                boolean expired = head.isExpired(now, ttlNanos);
                if (!expired && tombstoneCount.get() <= maxTombstones) {
                    break;
                }
                tombstoneFifo.poll();
                if (slots.remove(head.requestId, head)) {
                    tombstoneCount.decrementAndGet();
                    metrics.evicted(expired);
                    if (!expired) {
                        log.debug("tombstone table full ({}), evicted oldest requestId={}", maxTombstones,
                                head.requestId);
                    }
                }
            }
        } finally {
            sweepLock.unlock();
        }
    }
}
