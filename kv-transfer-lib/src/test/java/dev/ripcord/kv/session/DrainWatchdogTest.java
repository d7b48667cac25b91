package dev.ripcord.kv.session;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The watchdog on a hand-driven scheduler and clock: every poll is a call, every lease a number. */
class DrainWatchdogTest {
    static final long LEASE = 1_000;

    final AtomicLong clock = new AtomicLong();
    final List<Runnable> scheduled = new ArrayList<>();
    final List<FakeTask> tasks = new ArrayList<>();
    boolean schedulerShutDown;
    final DrainWatchdog watchdog = new DrainWatchdog(task -> {
        if (schedulerShutDown) {
            return null;
        }
        scheduled.add(task);
        FakeTask f = new FakeTask();
        tasks.add(f);
        return f;
    }, LEASE, clock::get);

    /** A session that drains after {@code pollsUntilDrained} rechecks. */
    static final class Session implements DrainWatchdog.Drain {
        final long id;
        int pollsUntilDrained;
        int rechecks; // poll thread only
        volatile boolean released;

        Session(long id, int pollsUntilDrained) {
            this.id = id;
            this.pollsUntilDrained = pollsUntilDrained;
        }

        @Override
        public void recheck() {
            rechecks++;
            if (rechecks >= pollsUntilDrained) {
                released = true;
            }
        }

        @Override
        public boolean isReleaseClaimed() {
            return released;
        }

        @Override
        public String requestId() {
            return "req-" + id;
        }

        @Override
        public long sessionId() {
            return id;
        }
    }

    @Test
    void startsOnePeriodicPollForAnyNumberOfWatchedSessions() {
        watchdog.watch(new Session(1, 5));
        watchdog.watch(new Session(2, 5));
        assertThat(scheduled).hasSize(1);
        assertThat(watchdog.watching()).isEqualTo(2);
        assertThat(watchdog.isRunning()).isTrue();
    }

    @Test
    void watchingTheSameSessionTwiceKeepsOneEntry() {
        Session s = new Session(1, 5);
        watchdog.watch(s);
        watchdog.watch(s);
        assertThat(watchdog.watching()).isEqualTo(1);
    }

    @Test
    void rechecksEachSessionEveryPollAndForgetsItOnceReleased() {
        Session quick = new Session(1, 1);
        Session slow = new Session(2, 3);
        watchdog.watch(quick);
        watchdog.watch(slow);

        watchdog.poll();
        assertThat(watchdog.watching()).isEqualTo(1);
        assertThat(quick.rechecks).isEqualTo(1);
        watchdog.poll();
        watchdog.poll();
        assertThat(quick.rechecks).isEqualTo(1); // forgotten once released
        assertThat(slow.rechecks).isEqualTo(3);
        assertThat(watchdog.watching()).isZero();
    }

    @Test
    void stopsThePollWhenTheLastSessionReleasedAndStartsItAgainOnTheNextWatch() {
        watchdog.watch(new Session(1, 1));
        watchdog.poll();
        assertThat(tasks.getFirst().cancelled).isTrue();
        assertThat(watchdog.isRunning()).isFalse();

        watchdog.watch(new Session(2, 1));
        assertThat(scheduled).hasSize(2);
        assertThat(watchdog.isRunning()).isTrue();
    }

    @Test
    void aSessionStuckPastTheLeaseStaysWatchedUntilItsWriterLeaves() {
        Session stuck = new Session(1, Integer.MAX_VALUE);
        watchdog.watch(stuck);
        clock.set(LEASE + 1);
        watchdog.poll(); // quarantined: warned, still watched
        clock.set(100 * LEASE);
        watchdog.poll();
        assertThat(watchdog.watching()).isEqualTo(1);
        assertThat(stuck.released).isFalse();

        stuck.pollsUntilDrained = stuck.rechecks + 1; // the writer left the bracket
        watchdog.poll();
        assertThat(stuck.released).isTrue();
        assertThat(watchdog.watching()).isZero();
        assertThat(watchdog.isRunning()).isFalse();
    }

    @Test
    void aShutDownSchedulerStartsNoPollButTheSessionIsStillKnown() {
        schedulerShutDown = true;
        watchdog.watch(new Session(1, 1));
        assertThat(scheduled).isEmpty();
        assertThat(watchdog.isRunning()).isFalse();
        assertThat(watchdog.watching()).isEqualTo(1);
    }

    @Test
    void concurrentWatchesAndPollsReleaseEverySessionAndLeaveNoPollRunning() throws Exception {
        int watchers = 3;
        int perWatcher = 2_000;
        Object lock = new Object();
        List<FakeTask> all = new ArrayList<>();
        int[] maxLive = {0};
        DrainWatchdog hammered = new DrainWatchdog(task -> {
            synchronized (lock) {
                FakeTask f = new FakeTask();
                all.add(f);
                maxLive[0] = Math.max(maxLive[0], (int) all.stream().filter(t -> !t.cancelled).count());
                return f;
            }
        }, LEASE, clock::get);
        List<Session> sessions = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger done = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < watchers; w++) {
            int base = w * perWatcher;
            threads.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < perWatcher; i++) {
                    Session s = new Session(base + i, 1 + (i % 4));
                    sessions.add(s);
                    hammered.watch(s);
                }
                done.incrementAndGet();
            }));
        }
        Thread poller = Thread.ofPlatform().start(() -> {
            while (done.get() < watchers || hammered.watching() > 0) {
                hammered.poll();
            }
        });
        for (Thread t : threads) {
            t.join();
        }
        poller.join();

        assertThat(sessions).hasSize(watchers * perWatcher).allMatch(s -> s.released);
        assertThat(hammered.watching()).isZero();
        assertThat(hammered.isRunning()).isFalse();
        synchronized (lock) {
            assertThat(maxLive[0]).isEqualTo(1); // never two periodic polls at once
            assertThat(all).allMatch(t -> t.cancelled);
        }
    }

    static final class FakeTask implements ScheduledFuture<Object> {
        volatile boolean cancelled;

        @Override
        public long getDelay(TimeUnit unit) {
            return 0;
        }

        @Override
        public int compareTo(Delayed o) {
            return 0;
        }

        @Override
        public boolean cancel(boolean mayInterruptIfRunning) {
            cancelled = true;
            return true;
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public boolean isDone() {
            return cancelled;
        }

        @Override
        public Object get() {
            return null;
        }

        @Override
        public Object get(long timeout, TimeUnit unit) {
            return null;
        }
    }
}
