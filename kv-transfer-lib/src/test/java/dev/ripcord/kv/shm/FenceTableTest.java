package dev.ripcord.kv.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FenceTableTest {
    @TempDir
    Path dir;

    @Test
    void fenceStopsNewWritesAndCountsThoseInside() throws Exception {
        Path file = ShmFiles.fenceFile(dir, 1, 5);
        try (FenceTable owner = FenceTable.create(file, 5, 4); FenceTable peer = FenceTable.open(dir, file.toString(), 5)) {
            long epoch = owner.openSlot(2);
            assertThat(peer.tryBeginWrite(2, epoch, 4242)).isEqualTo(FenceTable.Begin.WRITING);
            assertThat(peer.tryBeginWrite(2, epoch, 4243)).isEqualTo(FenceTable.Begin.BUSY);
            assertThat(owner.fence(2, epoch)).as("the writer inside the bracket").isEqualTo(4242);
            assertThat(peer.tryBeginWrite(2, epoch, 4242)).isEqualTo(FenceTable.Begin.FENCED);
            assertThat(owner.writer(2)).isEqualTo(4242);
            peer.endWrite(2);
            assertThat(owner.writer(2)).isZero();
            long next = owner.openSlot(2);
            assertThat(next).isEqualTo(epoch + 1);
            assertThat(peer.tryBeginWrite(2, epoch, 4242)).as("a stale epoch never writes again")
                    .isEqualTo(FenceTable.Begin.FENCED);
            assertThat(peer.tryBeginWrite(2, next, 4244)).isEqualTo(FenceTable.Begin.WRITING);
            assertThat(owner.writer(2)).isEqualTo(4244);
            assertThatThrownBy(() -> peer.tryBeginWrite(1, 1, 1L << 22)).isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(Files.exists(file)).isFalse();
    }

    @Test
    void refusesAnotherIncarnationsTable() throws Exception {
        Path file = ShmFiles.fenceFile(dir, 2, 5);
        try (FenceTable owner = FenceTable.create(file, 5, 4)) {
            assertThatThrownBy(() -> FenceTable.open(dir, file.toString(), 6)).isInstanceOf(java.io.IOException.class);
        }
    }

    /** A slot count of 2^58 makes {@code 4096 + slots * 64} wrap to 4096: the table must not be mapped as that big. */
    @Test
    void aSlotCountThatDoesNotFitTheFileIsRefusedBeforeMapping() throws Exception {
        Path file = ShmFiles.fenceFile(dir, 4, 9);
        try (FenceTable owner = FenceTable.create(file, 9, 4)) {
            for (long slots : new long[] {1L << 58, Long.MAX_VALUE, 5, 0, -1}) {
                try (var ch = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.WRITE)) {
                    ch.write(java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.nativeOrder())
                            .putLong(0, slots), 16);
                }
                assertThatThrownBy(() -> FenceTable.open(dir, file.toString(), 9)).as("%s slots", slots)
                        .isInstanceOf(RefusedShmFileException.class)
                        .hasMessageContaining("claims " + slots + " slots");
            }
        }
    }

    /**
     * Hammer: writers enter and leave the bracket as fast as they can while the owner fences, waits for zero and
     * reopens. Inside the bracket a writer bumps a "landed in epoch e" counter; after the owner saw zero writers
     * behind its fence, that counter must never move again.
     */
    @Test
    void noWriteStartsOnceTheFenceHasDrained() throws Exception {
        Path file = ShmFiles.fenceFile(dir, 3, 7);
        try (FenceTable owner = FenceTable.create(file, 7, 1); FenceTable peer = FenceTable.open(dir, file.toString(), 7)) {
            int rounds = 2000;
            AtomicLong currentEpoch = new AtomicLong(owner.openSlot(0));
            AtomicLong[] landed = new AtomicLong[rounds + 2];
            for (int i = 0; i < landed.length; i++) {
                landed[i] = new AtomicLong();
            }
            AtomicBoolean stop = new AtomicBoolean();
            CountDownLatch started = new CountDownLatch(3);
            Thread[] writers = new Thread[3];
            for (int w = 0; w < writers.length; w++) {
                writers[w] = Thread.ofPlatform().start(() -> {
                    started.countDown();
                    while (!stop.get()) {
                        long e = currentEpoch.get(); // may be stale by the time we try: that is the point
                        if (peer.tryBeginWrite(0, e, 1000) == FenceTable.Begin.WRITING) {
                            landed[(int) e].incrementAndGet();
                            peer.endWrite(0);
                        }
                    }
                });
            }
            started.await();
            for (int r = 0; r < rounds; r++) {
                long e = currentEpoch.get();
                owner.fence(0, e);
                while (owner.writer(0) != 0) {
                    Thread.onSpinWait();
                }
                long frozen = landed[(int) e].get();
                currentEpoch.set(owner.openSlot(0));
                for (int spin = 0; spin < 50; spin++) {
                    Thread.onSpinWait();
                }
                assertThat(landed[(int) e].get()).as("epoch %d after drain", e).isEqualTo(frozen);
            }
            stop.set(true);
            for (Thread t : writers) {
                t.join();
            }
        }
    }
}
