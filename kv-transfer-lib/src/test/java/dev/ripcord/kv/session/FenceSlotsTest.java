package dev.ripcord.kv.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.Test;

class FenceSlotsTest {

    @Test
    void handsOutFreshSlotsInOrderUntilExhaustedThenMinusOne() {
        FenceSlots slots = new FenceSlots(3);
        assertThat(List.of(slots.allocate(), slots.allocate(), slots.allocate())).containsExactly(0, 1, 2);
        assertThat(slots.allocate()).isEqualTo(-1);
        assertThat(slots.inUse()).isEqualTo(3);
    }

    @Test
    void reusesAFreedSlotBeforeAFreshOne() {
        FenceSlots slots = new FenceSlots(4);
        slots.allocate();
        int second = slots.allocate();
        slots.free(second);
        assertThat(slots.allocate()).isEqualTo(second);
        assertThat(slots.allocate()).isEqualTo(2);
        assertThat(slots.inUse()).isEqualTo(3);
    }

    @Test
    void aFreedSlotMakesRoomWhenAllWereInUse() {
        FenceSlots slots = new FenceSlots(1);
        int only = slots.allocate();
        assertThat(slots.allocate()).isEqualTo(-1);
        slots.free(only);
        assertThat(slots.inUse()).isZero();
        assertThat(slots.allocate()).isEqualTo(only);
    }

    @Test
    void noSlotsMeansEverySessionIsTcpOnly() {
        FenceSlots slots = new FenceSlots(0);
        assertThat(slots.allocate()).isEqualTo(-1);
        assertThat(slots.inUse()).isZero();
    }

    @Test
    void aSlotFreedTwiceIsReportedByTheConsistencyCheck() {
        FenceSlots slots = new FenceSlots(2);
        int slot = slots.allocate();
        slots.allocate();
        slots.free(slot);
        slots.free(slot);
        assertThatIllegalStateException().isThrownBy(slots::inUse).withMessageContaining("freed twice");
    }

    @Test
    void freeingASlotNeverHandedOutIsRejected() {
        FenceSlots slots = new FenceSlots(2);
        slots.allocate();
        assertThatIllegalArgumentException().isThrownBy(() -> slots.free(1));
        assertThatIllegalArgumentException().isThrownBy(() -> slots.free(-1));
    }

    @Test
    void concurrentAllocateAndFreeNeverHandOutOneSlotTwice() throws Exception {
        int capacity = 8;
        int threads = 4;
        int rounds = 20_000;
        FenceSlots slots = new FenceSlots(capacity);
        Set<Integer> held = ConcurrentHashMap.newKeySet();
        ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            workers.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                } catch (InterruptedException e) {
                    return;
                }
                List<Integer> mine = new ArrayList<>();
                for (int i = 0; i < rounds; i++) {
                    if (!mine.isEmpty() && (mine.size() >= 3 || ThreadLocalRandom.current().nextBoolean())) {
                        int slot = mine.remove(mine.size() - 1);
                        held.remove(slot);
                        slots.free(slot);
                    } else {
                        int slot = slots.allocate();
                        if (slot >= 0) {
                            if (!held.add(slot)) {
                                violations.add("slot " + slot + " handed out twice");
                            }
                            mine.add(slot);
                        }
                    }
                }
                for (int slot : mine) {
                    held.remove(slot);
                    slots.free(slot);
                }
            }));
        }
        start.countDown();
        for (Thread w : workers) {
            w.join();
        }
        assertThat(violations).isEmpty();
        assertThat(slots.inUse()).isZero();
        Set<Integer> all = new HashSet<>();
        for (int i = 0; i < capacity; i++) {
            all.add(slots.allocate());
        }
        assertThat(all).hasSize(capacity).allMatch(s -> s >= 0 && s < capacity);
    }
}
