package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.testing.KvLeakCheck;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

@ExtendWith(KvLeakCheck.class)
class TransferSessionTest {
    static final int PAGE = 4096;

    final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    TransferAgent decode;
    TransferAgent prefill;

    void start(Backend senderBackend) {
        decode = TransferAgent.start(TransferAgentOptions.defaults("decode").withMeterRegistry(registry));
        prefill = TransferAgent.start(TransferAgentOptions.defaults("prefill").withBackend(senderBackend)
                .withMeterRegistry(registry));
    }

    @AfterEach
    void close() {
        if (prefill != null) {
            prefill.close();
        }
        if (decode != null) {
            decode.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = Backend.class, names = {"TCP", "SHM"})
    void transfersChunksIntoScatteredPagesAndCompletesWithMetadata(Backend backend) throws Exception {
        start(backend);
        KvRegion pool = decode.allocateRegion(64 * PAGE);
        KvRegion src = prefill.allocateRegion(64 * PAGE);
        List<ByteRange> pages = List.of(new ByteRange(10 * PAGE, PAGE), new ByteRange(3 * PAGE, 2 * PAGE),
                new ByteRange(40 * PAGE, 5 * PAGE));
        long total = 8 * PAGE;
        Patterns.poison(pool.segment(), 0, pool.byteSize());
        Patterns.fill(src.segment(), 0, total, 42, 0);
        List<long[]> landed = new CopyOnWriteArrayList<>();
        ReceiveSession rx = decode.openReceive("req-1", pool, pages, new ReceiveListener() {
            @Override
            public void onChunkLanded(ReceiveSession session, long dstOffset, long length) {
                landed.add(new long[] {dstOffset, length});
            }
        });

        SendSession tx = prefill.connect(ReceiveDescriptor.parse(rx.descriptor().encode()));
        assertThat(tx.backend()).isEqualTo(backend);
        tx.send(src, 0, 3 * PAGE, 0).get(10, TimeUnit.SECONDS);
        tx.send(src.segment().asSlice(3 * PAGE, 5 * PAGE), 3 * PAGE).get(10, TimeUnit.SECONDS);
        tx.complete(new byte[] {7, 1}).get(10, TimeUnit.SECONDS);

        assertThat(rx.completion().get(10, TimeUnit.SECONDS)).containsExactly(7, 1);
        assertThat(rx.released().get(10, TimeUnit.SECONDS)).isEqualTo(SessionState.COMPLETED);
        assertThat(tx.released().get(10, TimeUnit.SECONDS)).isEqualTo(SessionState.COMPLETED);
        assertThat(rx.state()).isEqualTo(SessionState.RELEASED);
        assertThat(rx.bytesReceived()).isEqualTo(total);
        assertThat(landed).extracting(a -> a[0] + "+" + a[1]).containsExactly("0+" + 3 * PAGE, 3 * PAGE + "+" + 5 * PAGE);
        long at = 0;
        for (ByteRange r : pages) {
            assertThat(Patterns.firstMismatch(pool.segment(), r.offset(), r.length(), 42, at)).isEqualTo(-1);
            at += r.length();
        }
        assertThat(Patterns.firstNonPoison(pool.segment(), 0, 3 * PAGE)).isEqualTo(-1);
        assertThat(registry.get("ripcord.kv.bytes").tag("agent", "decode").tag("direction", "received")
                .tag("backend", backend.name().toLowerCase()).counter().count()).isEqualTo(total);
        assertThat(registry.get("ripcord.kv.bytes").tag("agent", "prefill").tag("direction", "sent")
                .tag("backend", backend.name().toLowerCase()).counter().count()).isEqualTo(total);
        assertThat(registry.get("ripcord.kv.sessions").tag("agent", "decode").tag("side", "receiver").tag("outcome", "completed")
                .counter().count()).isEqualTo(1);
        pool.close();
        src.close();
        pool.released().get(5, TimeUnit.SECONDS);
        src.released().get(5, TimeUnit.SECONDS);
        assertThat(decode.stats()).extracting(TransferStats::liveRegions, TransferStats::liveSessions)
                .containsExactly(0L, 0L);
    }
}
