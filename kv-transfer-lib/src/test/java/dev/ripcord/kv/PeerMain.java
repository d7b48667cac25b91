package dev.ripcord.kv;

import dev.ripcord.kv.shm.FenceTable;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;

/**
 * The other process in cross-process tests: a sending and receiving agent driven by one-line commands on stdin,
 * answering with one-line events on stdout (other stdout lines are logs). Commands:
 * <pre>
 * SEND tcp|auto TAG CHUNK complete|idle|stream DESCRIPTOR   push TAG's pattern into the descriptor's targets
 * RECV TAG BYTES                                           open a receive session; answers DESC TAG descriptor
 * BRACKET TAG DESCRIPTOR                                   enter the descriptor's fence bracket as this process, as a
 *                                                          shared-memory copy does, and stay inside; answers INSIDE TAG
 * LEAVE TAG                                                leave that bracket; answers LEFT TAG
 * EXIT
 * </pre>
 */
public final class PeerMain {
    private PeerMain() {
    }

    private static final Map<String, FenceTable> brackets = new HashMap<>();
    private static final Map<String, Integer> slots = new HashMap<>();

    public static void main(String[] args) throws Exception {
        Duration lease = Duration.ofMillis(Long.parseLong(args[0]));
        TransferAgent tcp = TransferAgent.start(TransferAgentOptions.defaults("peer-tcp").withBackend(Backend.TCP)
                .withLease(lease));
        TransferAgent auto = TransferAgent.start(TransferAgentOptions.defaults("peer-auto").withLease(lease));
        say("READY " + ProcessHandle.current().pid());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.split(" ");
            switch (w[0]) {
                case "SEND" -> {
                    TransferAgent a = w[1].equals("tcp") ? tcp : auto;
                    Thread.ofPlatform().start(() -> send(a, Long.parseLong(w[2]), Integer.parseInt(w[3]), w[4],
                            ReceiveDescriptor.parse(w[5])));
                }
                case "RECV" -> receive(auto, Long.parseLong(w[1]), Long.parseLong(w[2]));
                case "BRACKET" -> {
                    ReceiveDescriptor d = ReceiveDescriptor.parse(w[2]);
                    FenceTable table = FenceTable.open(Path.of(d.shmFenceFile()).getParent(), d.shmFenceFile(), d.agentIncarnation());
                    FenceTable.Begin begin = table.tryBeginWrite(d.fenceSlot(), d.epoch(),
                            ProcessHandle.current().pid());
                    brackets.put(w[1], table);
                    slots.put(w[1], d.fenceSlot());
                    say((begin == FenceTable.Begin.WRITING ? "INSIDE " : "REFUSED ") + w[1]);
                }
                case "LEAVE" -> {
                    FenceTable table = brackets.remove(w[1]);
                    table.endWrite(slots.remove(w[1]));
                    table.close();
                    say("LEFT " + w[1]);
                }
                case "EXIT" -> {
                    tcp.close();
                    auto.close();
                    say("BYE");
                    System.exit(0);
                }
                default -> say("UNKNOWN " + line);
            }
        }
    }

    private static void send(TransferAgent agent, long tag, int chunk, String mode, ReceiveDescriptor d) {
        long total = d.totalBytes();
        KvRegion src = agent.allocateRegion(total);
        Patterns.fill(src.segment(), 0, total, tag, 0);
        SendSession tx = agent.connect(d);
        try {
            switch (mode) {
                case "complete" -> {
                    for (long off = 0; off < total; off += chunk) {
                        tx.send(src, off, Math.min(chunk, total - off), off);
                    }
                    tx.complete(ByteBuffer.allocate(8).putLong(tag).array()).join();
                    say("DONE " + tag + " " + tx.backend());
                }
                case "idle" -> {
                    tx.send(src, 0, Math.min(chunk, total), 0).join();
                    say("ATTACHED " + tag + " " + tx.backend());
                }
                case "stream" -> {
                    for (long i = 0; ; i++) {
                        long off = (i * chunk) % total;
                        tx.send(src, off, Math.min(chunk, total - off), off).join();
                        if (i == 0) {
                            say("STREAMING " + tag + " " + tx.backend());
                        }
                    }
                }
                default -> throw new IllegalArgumentException(mode);
            }
        } catch (CompletionException | java.util.concurrent.CancellationException e) {
            say("ABORTED " + tag + " " + TransferAbortedException.reasonOf(e).map(AbortReason::cause).orElse(null));
        }
        tx.released().thenRun(src::close);
    }

    private static void receive(TransferAgent agent, long tag, long bytes) {
        KvRegion region = agent.allocateRegion(bytes);
        ReceiveSession rx = agent.openReceive("child-" + tag, region, List.of(new ByteRange(0, bytes)));
        rx.released().thenAccept(end -> {
            boolean ok = end == SessionState.COMPLETED
                    && Patterns.firstMismatch(region.segment(), 0, bytes, tag, 0) == -1;
            region.close();
            say("RECV_ENDED " + tag + " " + end + (ok ? " ok" : ""));
        });
        say("DESC " + tag + " " + rx.descriptor().encode());
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
