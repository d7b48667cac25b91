package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.testing.KvLeakCheck;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Each acknowledged write is timed in two parts, on the sender: accepted → its bytes out of the source (the copy, or
 * the kernel taking the last piece), then → its WRITE_ACK read back. What a send burst waits on shows there, per
 * backend: the library's own work, or the round trip behind it.
 */
@ExtendWith(KvLeakCheck.class)
class WriteTimeTest extends AgentsPerTest {
    static final int PAGE = 64 * 1024;
    static final int WRITES = 5;

    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"TCP", "SHM"})
    void everyAcknowledgedWriteIsTimedInBothPhasesUnderItsBackend(Backend backend) throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode-times").withBackend(backend));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill-times").withBackend(backend));
        KvRegion pool = decode.allocateRegion(WRITES * PAGE);
        KvRegion src = prefill.allocateRegion(2L * WRITES * PAGE);
        ReceiveSession rx = decode.openReceive("req-times", pool, List.of(new ByteRange(0, (long) WRITES * PAGE)));
        SendSession tx = prefill.connect(rx.descriptor());
        List<CompletableFuture<Void>> writes = new ArrayList<>();
        for (int i = 0; i < WRITES; i++) {
            // a batch of two scattered spans, like prefill posting a chunk's pages
            writes.add(tx.sendBatch(src, List.of(new ByteRange(2L * i * PAGE + PAGE, PAGE / 2),
                    new ByteRange(2L * i * PAGE, PAGE / 2)), (long) i * PAGE));
        }
        for (CompletableFuture<Void> w : writes) {
            get(w);
        }
        get(tx.complete(new byte[0]));

        String tag = backend.name().toLowerCase(java.util.Locale.ROOT);
        String other = backend == Backend.TCP ? "shm" : "tcp";
        assertThat(writeTime("prefill-times", tag, "transport").count()).isEqualTo(WRITES);
        assertThat(writeTime("prefill-times", tag, "acknowledgement").count()).isEqualTo(WRITES);
        assertThat(writeTime("prefill-times", other, "transport").count()).isZero();
        assertThat(writeTime("decode-times", tag, "acknowledgement").count()).as("the receiver times nothing")
                .isZero();

        get(rx.released());
        get(tx.released());
        pool.close();
        src.close();
        get(pool.released());
        get(src.released());
    }

    private Timer writeTime(String agent, String backend, String phase) {
        return registry.get("ripcord.kv.write.time").tags("agent", agent, "backend", backend, "phase", phase).timer();
    }
}
