package dev.ripcord.decode.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.stream.IntStream;

import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;
import dev.ripcord.protocol.DecodeEvent;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.Sampling;
import dev.ripcord.worker.job.JobState;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Which backend carries a request's KV between the two workers, wired as in the services (each engine's page pool
 * in a region its agent allocated): {@code auto} and {@code shm} copy through shared memory on one host, {@code tcp}
 * on either side means TCP; every combination produces the same tokens, counts its bytes under the backend that
 * carried them, journals it, and leaves nothing behind. An {@code shm} sender facing a receiver on another host is
 * refused at admission with a message that says why, and the request ends instead of hanging.
 */
@ExtendWith(KvLeakCheck.class)
class TransferBackendTest {

    private static final int PROMPT = 40;
    private static final int MAX_TOKENS = 6;

    @ParameterizedTest(name = "prefill {0}, decode {1} -> {2}")
    @CsvSource({"AUTO, AUTO, SHM", "SHM, SHM, SHM", "SHM, AUTO, SHM", "AUTO, SHM, SHM", "TCP, TCP, TCP",
            "TCP, AUTO, TCP", "AUTO, TCP, TCP"})
    void theRequestsKvTravelsOverTheBackendBothSidesAllowAndDecodesTheSameTokens(Backend prefill, Backend decode,
                                                                                 Backend carrier) {
        assertThat(generate(prefill, decode, carrier)).isEqualTo(reference());
    }

    private static List<Integer> reference;

    /** The tokens over TCP, the backend that was there first. */
    private static synchronized List<Integer> reference() {
        if (reference == null) {
            reference = generate(Backend.TCP, Backend.TCP, Backend.TCP);
        }
        return reference;
    }

    /** Generates one request over the given backends and checks where its bytes went; returns its tokens. */
    private static List<Integer> generate(Backend prefill, Backend decode, Backend carrier) {
        try (TwoWorkers workers = new TwoWorkers(1, prefill, decode)) {
            TwoWorkers.Request request = workers.reserve("backend-" + prefill + "-" + decode, PROMPT, MAX_TOKENS);
            request.startPrefill();
            workers.runUntil("decode to finish", () -> request.decodeJob.state().isTerminal());
            workers.runUntilQuiet();
            assertThat(request.decodeJob.state()).isEqualTo(JobState.DONE);

            long pages = workers.decodeEngine.kvLayout().pagesFor(PROMPT);
            long bytes = pages * workers.decodeEngine.pagePool().pageBytes();
            String used = carrier.name().toLowerCase(java.util.Locale.ROOT);
            String unused = carrier == Backend.SHM ? "tcp" : "shm";
            assertThat(kvBytes(workers.prefillMeters, "sent", used)).as("sent over " + used).isEqualTo(bytes);
            assertThat(kvBytes(workers.decodeMeters, "received", used)).as("landed via " + used).isEqualTo(bytes);
            assertThat(kvBytes(workers.prefillMeters, "sent", unused)).as("sent over " + unused).isZero();
            assertThat(kvBytes(workers.decodeMeters, "received", unused)).as("landed via " + unused).isZero();

            // The per-request throughput meters and the journal name the same backend.
            assertThat(workers.prefillMeters.get("ripcord.kv.transfer.bytes").tag("backend", used).summary()
                    .totalAmount()).isEqualTo(bytes);
            assertThat(workers.prefillMeters.get("ripcord.kv.transfer.time").tag("backend", used).timer().count())
                    .isEqualTo(1);
            assertThat(workers.prefillMeters.get("ripcord.kv.transfer.time").tag("backend", unused).timer().count())
                    .isZero();
            JournalEntry done = TwoWorkers.entries(workers.prefillJournal, request.id).stream()
                    .filter(e -> e.event().equals("DONE")).findFirst().orElseThrow();
            assertThat(done.detail()).contains("KV " + bytes + " bytes over " + carrier);

            return request.decodeEvents.stream().filter(e -> e instanceof DecodeEvent.Token)
                    .map(e -> ((DecodeEvent.Token) e).token()).toList();
        }
    }

    @Test
    void anShmSenderRefusesAReceiverOnAnotherHostWithAClearErrorAndNothingHangs() {
        try (TwoWorkers workers = new TwoWorkers(1, Backend.SHM, Backend.SHM)) {
            TwoWorkers.Request request = workers.reserve("other-host", PROMPT, MAX_TOKENS);
            ReceiveDescriptor d = ReceiveDescriptor.parse(request.transfer());
            assertThat(d.offersSharedMemory()).isTrue();
            // The same descriptor as a receiver on another machine would send it: its shared memory is not ours.
            ReceiveDescriptor elsewhere = new ReceiveDescriptor(d.requestId(), d.agentName(), d.agentIncarnation(),
                    d.tcpHost(), d.tcpPort(), "another-host/" + d.shmHost(), d.shmRegionFile(), d.shmFenceFile(),
                    d.fenceSlot(), d.epoch(), d.sessionId(), d.attachToken(), d.regionId(), d.targets(),
                    d.totalBytes());
            int[] tokens = IntStream.range(0, PROMPT).map(i -> 'a' + i % 26).toArray();

            assertThatThrownBy(() -> workers.prefill.submit(new PrefillRequest(request.id, tokens,
                    new Sampling(0, 1, 42), elsewhere.encode())))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("cannot connect to the KV receiver")
                    .hasMessageContaining("backend SHM but the receiver offers no shared memory on this host");

            // Prefill kept nothing; the gateway answers the client and cancels decode's reservation.
            assertThat(workers.prefillAgent.stats().liveSessions()).isZero();
            assertThat(workers.prefillRegistry.liveRegistrations()).isZero();
            workers.decodeRegistry.cancel(request.id, CancelReason.CLIENT_DISCONNECT, CancelSource.IN_BAND);
            workers.runUntil("decode to stop", () -> request.decodeJob.state().isTerminal());
            workers.runUntilQuiet();
            assertThat(request.decodeJob.state()).isEqualTo(JobState.CANCELLED);
        }
    }

    private static long kvBytes(MeterRegistry meters, String direction, String backend) {
        return (long) meters.get("ripcord.kv.bytes").tag("direction", direction).tag("backend", backend).counter()
                .count();
    }
}
