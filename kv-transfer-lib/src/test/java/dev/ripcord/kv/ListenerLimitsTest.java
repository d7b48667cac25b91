package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.ripcord.kv.shm.HostIdentity;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.kv.wire.FrameType;
import dev.ripcord.kv.wire.Frames;
import io.netty.buffer.ByteBufUtil;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** What the KV listener gives a peer that has not proven anything yet: a bounded place, and little about the host. */
@ExtendWith(KvLeakCheck.class)
class ListenerLimitsTest extends AgentsPerTest {

    @Test
    void aConnectionOverTheCapIsClosedAtAcceptAndCountedWhileAdmittedOnesAreServed() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withMaxConnections(2));
        try (RawPeer a = connect(decode); RawPeer b = connect(decode)) {
            assertThat(handshake(a, 1).type()).isEqualTo(FrameType.HELLO);
            assertThat(handshake(b, 2).type()).isEqualTo(FrameType.HELLO);

            try (Socket c = socketTo(decode)) {
                assertThat(c.getInputStream().read()).as("the third connection is closed unread").isEqualTo(-1);
            }
            assertThat(refused()).isEqualTo(1);
            assertThat(Internals.agent(decode).listenerConnections()).isEqualTo(2);

            a.close();
            await().atMost(WAIT).until(() -> Internals.agent(decode).listenerConnections() == 1);
            try (RawPeer d = connect(decode)) {
                assertThat(handshake(d, 4).type()).as("a closed connection gives its place back")
                        .isEqualTo(FrameType.HELLO);
            }
            assertThat(refused()).isEqualTo(1);
        }
    }

    @Test
    void helloCarriesNeitherHostnameNorBootIdOnlyADigestOfThem() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode"));
        byte[] hello;
        try (RawPeer p = connect(decode)) {
            RawPeer.Frame f = handshake(p, 1);
            hello = ByteBufUtil.getBytes(f.body());
            assertThat(Frames.Hello.decode(f.body()).hostId()).matches("sha256:[0-9a-f]{64}")
                    .isEqualTo(HostIdentity.local());
        }
        String text = new String(hello, StandardCharsets.ISO_8859_1);
        String hostname = HostIdentity.hostname();
        String bootId = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
        assertThat(hostname).isNotBlank();
        assertThat(text).doesNotContain(hostname).doesNotContain(bootId)
                .doesNotContain(bootId.replace("-", ""));
    }

    private double refused() {
        return registry.get("ripcord.kv.connections.refused").tag("agent", "decode").counter().count();
    }

    private static Socket socketTo(TransferAgent agent) throws IOException {
        Socket s = new Socket();
        s.setSoTimeout((int) WAIT.toMillis());
        s.connect(new InetSocketAddress("127.0.0.1", agent.listenAddress().getPort()));
        return s;
    }

    private static RawPeer connect(TransferAgent agent) throws IOException {
        return new RawPeer(socketTo(agent));
    }

    /** Sends a HELLO and returns the agent's answer. */
    private static RawPeer.Frame handshake(RawPeer p, long incarnation) throws IOException {
        p.send(RawPeer.hello(incarnation, "sender-" + incarnation).encode(RawPeer.ALLOC));
        return p.read();
    }
}
