package dev.ripcord.decode.http;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Set;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.decode.scheduler.DecodeScheduler;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.worker.WorkerContext;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A gateway connection that ends with a TCP reset (a proxy or a network between gateway and worker resetting it, as
 * the fault bench does) cancels the decode job it carried, in whatever phase the reset finds it: waiting for the
 * engine loop to register it, queued for pages and a batch slot, or reserved and waiting for KV. The job ends with the
 * in-band cancel, not with the KV transfer's attach timeout thirty seconds later, which is how long its pages would
 * otherwise be held.
 */
@DecodeWorkerTest
class DecodeConnectionResetTest {

    /**
     * Journal events that end a decode job that never got KV (a cancelled transfer also records the transfer's own
     * failure, KV_FAILED, after TRANSFER_ABORTED; a job cancelled while it waited in the admission queue for pages and
     * a batch slot, REMOVED_FROM_QUEUE).
     */
    private static final Set<String> ENDS = Set.of("CANCELLED_AT_ADMISSION", "REMOVED_FROM_QUEUE", "TRANSFER_ABORTED",
            "KV_FAILED", "REFUSED");

    @LocalServerPort
    int port;

    @Autowired
    DecodeScheduler scheduler;

    @Autowired
    WorkerContext context;

    @Autowired
    CancellationRegistry registry;

    @Test
    void aResetWhileRegistrationWaitsForTheEngineLoopCancelsTheJob() throws Exception {
        String id = "reset-before-registration-1";
        // Registration waits behind the busy loop; the loop goes on once the socket is reset (resources close in
        // reverse order).
        try (BusyEngineLoop busy = BusyEngineLoop.hold(scheduler.engineLoop()); Socket socket = connect()) {
            send(socket, id);
            // The request is read and handed to the scheduler: it is queued behind the busy loop.
            await().atMost(Duration.ofSeconds(30)).until(() -> scheduler.engineLoop().pending() > 0);
            reset(socket);
        }

        assertEndsWithTheInBandCancel(id);
    }

    @Test
    void aResetWhileTheJobWaitsForKvCancelsTheJob() throws Exception {
        String id = "reset-awaiting-kv-1";
        try (Socket socket = connect()) {
            send(socket, id);
            BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(),
                    StandardCharsets.US_ASCII));
            String line;
            while ((line = in.readLine()) != null && !line.contains("RESERVED")) {
                // headers and chunk sizes until the first event: the job holds its pages and waits for KV
            }
            assertThat(line).as("the reserved event").isNotNull();
            reset(socket);
        }

        assertEndsWithTheInBandCancel(id);
    }

    private void assertEndsWithTheInBandCancel(String id) {
        await().atMost(Duration.ofSeconds(60)).until(() -> RequestJournal.entries(context, id).stream()
                .anyMatch(e -> ENDS.contains(e.event())));
        List<JournalEntry> ends = RequestJournal.entries(context, id).stream()
                .filter(e -> ENDS.contains(e.event())).toList();
        assertThat(ends.getFirst().event()).as("how %s ended: %s", id, ends)
                .isIn("CANCELLED_AT_ADMISSION", "REMOVED_FROM_QUEUE", "TRANSFER_ABORTED");
        assertThat(ends).as("how %s ended", id).allSatisfy(e -> assertThat(e.detail()).contains("CONNECTION_CLOSED"));
        await().atMost(Duration.ofSeconds(30)).until(() -> registry.liveRegistrations() == 0);
    }

    private Socket connect() throws Exception {
        Socket socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
        socket.setSoTimeout(30_000);
        return socket;
    }

    private static void send(Socket socket, String id) throws Exception {
        String body = "{\"requestId\":\"" + id + "\",\"promptTokens\":4,\"maxTokens\":4,"
                + "\"sampling\":{\"temperature\":0.0,\"topP\":1.0,\"seed\":7},\"ignoreEos\":false}";
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        String head = "POST " + InternalApi.DECODE + " HTTP/1.1\r\n"
                + "Host: 127.0.0.1\r\n"
                + RequestIds.HEADER + ": " + id + "\r\n"
                + "X-Ripcord-Internal-Token: " + DecodeWorkerTest.INTERNAL_TOKEN + "\r\n"
                + "Content-Type: application/json\r\n"
                + "Accept: " + InternalApi.NDJSON + "\r\n"
                + "Content-Length: " + bytes.length + "\r\n\r\n";
        OutputStream out = socket.getOutputStream();
        out.write(head.getBytes(StandardCharsets.US_ASCII));
        out.write(bytes);
        out.flush();
    }

    /** Closes with a TCP reset (RST), not an orderly FIN. */
    private static void reset(Socket socket) throws Exception {
        socket.setSoLinger(true, 0);
        socket.close();
    }
}
