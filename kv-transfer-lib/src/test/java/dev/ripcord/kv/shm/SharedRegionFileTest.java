package dev.ripcord.kv.shm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SharedRegionFileTest {
    @TempDir
    Path dir;

    @Test
    void bothSidesSeeTheDataAsNativeSegmentsOverTheSamePagesThatCloseWithTheirMapping() throws Exception {
        Path file = ShmFiles.regionFile(dir, 1, 7, 3);
        SharedRegionFile receiver = SharedRegionFile.create(file, 7, 3, 8192);
        SharedRegionFile sender = SharedRegionFile.open(dir, file.toString(), 7, 3);
        try {
            // the class the engine's own segments are (its kernels compile to slower code for a mix of classes)
            assertThat(receiver.data().isMapped()).isFalse();
            assertThat(sender.data().isMapped()).isFalse();
            assertThat(receiver.data().byteSize()).isEqualTo(8192);
            assertThat(sender.data().byteSize()).isEqualTo(8192);

            sender.data().set(ValueLayout.JAVA_LONG, 8184, 0x1234_5678_9abcL);
            assertThat(receiver.data().get(ValueLayout.JAVA_LONG, 8184)).isEqualTo(0x1234_5678_9abcL);
        } finally {
            sender.close();
        }
        assertThat(sender.data().scope().isAlive()).isFalse();
        assertThatThrownBy(() -> sender.data().get(ValueLayout.JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        assertThat(receiver.data().get(ValueLayout.JAVA_LONG, 8184)).as("the sender's unmapping leaves the receiver's")
                .isEqualTo(0x1234_5678_9abcL);
        receiver.close();
        assertThat(receiver.data().scope().isAlive()).isFalse();
    }
}
