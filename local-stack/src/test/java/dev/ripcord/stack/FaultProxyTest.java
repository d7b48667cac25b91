package dev.ripcord.stack;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * {@link FaultProxy} in front of a real socket echo server: what arrives, in what order, and in what state the
 * connections are, for each fault. No assertion on time (the waits below wait for states, bounded as hang guards).
 */
class FaultProxyTest {

    private static final Duration HANG_GUARD = Duration.ofSeconds(30);

    private EchoServer echo;
    private FaultProxy proxy;

    @BeforeEach
    void start() throws IOException {
        echo = new EchoServer();
        proxy = FaultProxy.start("test", 0, "localhost", echo.port());
    }

    @AfterEach
    void stop() throws IOException {
        proxy.close();
        echo.close();
    }

    @Test
    void withoutAFaultEveryByteComesBackInOrder() throws IOException {
        try (Socket s = connect()) {
            StringBuilder sent = new StringBuilder();
            for (int i = 0; i < 200; i++) {
                String line = "line " + i + "\n";
                sent.append(line);
                s.getOutputStream().write(line.getBytes(StandardCharsets.US_ASCII));
            }
            assertThat(read(s, sent.length())).isEqualTo(sent.toString());
            // Each byte twice: up to the echo server and back.
            Awaitility.await().atMost(HANG_GUARD).until(() -> proxy.bytesForwarded() == 2L * echo.received.get());
            assertThat(echo.received.get()).isEqualTo(sent.length());
        }
        assertThat(proxy.bytesDropped()).isZero();
    }

    @Test
    void latencyDelaysButNeitherLosesNorReorders() throws IOException {
        proxy.latency(Duration.ofMillis(5));
        try (Socket s = connect()) {
            StringBuilder sent = new StringBuilder();
            for (int i = 0; i < 20; i++) {
                String chunk = "chunk-" + i + ";";
                sent.append(chunk);
                s.getOutputStream().write(chunk.getBytes(StandardCharsets.US_ASCII));
            }
            assertThat(read(s, sent.length())).isEqualTo(sent.toString());
        }
        assertThat(proxy.toString()).contains("latency PT0.005S");
    }

    @Test
    void resetClosesEveryOpenConnectionAndTheNextOneWorks() throws IOException {
        try (Socket a = connect(); Socket b = connect()) {
            roundTrip(a, "a");
            roundTrip(b, "b");
            assertThat(proxy.openConnections()).isEqualTo(2);

            assertThat(proxy.reset()).isEqualTo(2);

            assertThat(proxy.openConnections()).isZero();
            assertThat(proxy.connectionsReset()).isEqualTo(2);
            assertThat(endOfStream(a)).as("the client sees its connection end").isTrue();
        }
        try (Socket c = connect()) {
            roundTrip(c, "after the reset");
        }
    }

    @Test
    void aPartitionHoldsTheBytesAndForwardsThemInOrderWhenItHeals() throws IOException {
        try (Socket s = connect()) {
            roundTrip(s, "before");
            long received = echo.received.get();
            proxy.partition();
            s.getOutputStream().write("held-1;held-2;".getBytes(StandardCharsets.US_ASCII));
            Awaitility.await().atMost(HANG_GUARD).until(() -> proxy.bytesHeld() == "held-1;held-2;".length());
            assertThat(echo.received.get()).as("nothing reached upstream during the partition").isEqualTo(received);

            proxy.heal();

            assertThat(read(s, "held-1;held-2;".length())).isEqualTo("held-1;held-2;");
            assertThat(proxy.bytesHeld()).isZero();
        }
    }

    @Test
    void aNewConnectionDuringAPartitionReachesUpstreamOnlyWhenItHeals() throws IOException {
        proxy.partition();
        try (Socket s = connect()) {
            Awaitility.await().atMost(HANG_GUARD).until(() -> proxy.connectionsAccepted() == 1);
            assertThat(echo.accepted.get()).isZero();
            proxy.heal();
            roundTrip(s, "late");
            assertThat(echo.accepted.get()).isEqualTo(1);
        }
    }

    @Test
    void aTimeoutClosesTheConnectionsThatWaitedAndForwardsNothing() throws IOException {
        try (Socket s = connect()) {
            roundTrip(s, "before");
            long received = echo.received.get();
            proxy.timeout(Duration.ofMillis(200));
            s.getOutputStream().write("never".getBytes(StandardCharsets.US_ASCII));
            assertThat(endOfStream(s)).isTrue();
            assertThat(proxy.openConnections()).isZero();
            assertThat(proxy.connectionsReset()).isEqualTo(1);
            assertThat(echo.received.get()).isEqualTo(received);
        }
        proxy.heal();
        try (Socket s = connect()) {
            roundTrip(s, "after");
        }
    }

    @Test
    void aBlackholeDropsEveryByteAndKeepsTheConnectionOpen() throws IOException {
        try (Socket s = connect()) {
            roundTrip(s, "before");
            long received = echo.received.get();
            proxy.blackhole();
            s.getOutputStream().write("lost".getBytes(StandardCharsets.US_ASCII));
            Awaitility.await().atMost(HANG_GUARD).until(() -> proxy.bytesDropped() == 4);
            assertThat(echo.received.get()).isEqualTo(received);
            assertThat(proxy.openConnections()).isEqualTo(1);

            proxy.heal();

            roundTrip(s, "after");
        }
    }

    @Test
    void aDroppingPartitionRefusesNewConnectionsDropsTheBytesAndResetsTheConnectionsThatLostSomeWhenItHeals()
            throws IOException {
        try (Socket quiet = connect(); Socket busy = connect(); Socket givesUp = connect()) {
            roundTrip(quiet, "q");
            roundTrip(busy, "b");
            roundTrip(givesUp, "g");
            long received = echo.received.get();
            proxy.drop();

            try (Socket refused = connect()) {
                assertThat(endOfStream(refused)).isTrue();
            }
            Awaitility.await().atMost(HANG_GUARD).until(() -> proxy.connectionsRefused() == 1);
            busy.getOutputStream().write("lost".getBytes(StandardCharsets.US_ASCII));
            Awaitility.await().atMost(HANG_GUARD).until(() -> proxy.bytesDropped() == 4);
            givesUp.close(); // a client whose timeout ran out: the close is lost too
            Awaitility.await().atMost(HANG_GUARD).until(() -> proxy.clientsGaveUp() == 1);
            assertThat(echo.received.get()).isEqualTo(received);
            assertThat(proxy.openConnections()).isEqualTo(3);

            proxy.heal();

            assertThat(endOfStream(busy)).isTrue();
            assertThat(proxy.connectionsCutOnHeal()).isEqualTo(2);
            assertThat(proxy.openConnections()).isEqualTo(1);
            roundTrip(quiet, "still there");
        }
        assertThat(proxy.connectionsReset()).isZero();
        try (Socket s = connect()) {
            roundTrip(s, "after");
        }
    }

    @Test
    void anUpstreamThatIsGoneClosesTheClientsConnection() throws IOException {
        // The upstream port stays bound (without SO_REUSEADDR, not listening) for the whole test: a connection to
        // it is refused, and no other socket on this host can take the port over, as one could once a closed
        // server had freed it.
        try (Socket reserved = new Socket()) {
            reserved.setReuseAddress(false);
            reserved.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            try (FaultProxy gone = FaultProxy.start("gone", 0, "127.0.0.1", reserved.getLocalPort());
                    Socket s = connect(gone)) {
                assertThat(endOfStream(s)).isTrue();
                Awaitility.await().atMost(HANG_GUARD).until(() -> gone.openConnections() == 0);
                assertThat(gone.connectionsAccepted()).isEqualTo(1);
            }
        }
    }

    @Test
    void aSocketJoinedToItselfIsToldApartFromAProxiedOne() throws IOException {
        // A socket that connects to its own bound address: TCP's simultaneous open joins it to itself, as happens
        // when a connect to a port nothing listens on picks that port as its own.
        try (Socket self = new Socket()) {
            self.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            self.connect(self.getLocalSocketAddress(), (int) HANG_GUARD.toMillis());
            assertThat(FaultProxy.selfConnected(self)).isTrue();
        }
        try (Socket s = connect()) {
            assertThat(FaultProxy.selfConnected(s)).isFalse();
        }
    }

    @Test
    void closeIsIdempotentAndRefusesNewConnections() {
        proxy.close();
        proxy.close();
        assertThat(catchThrowable(this::connect)).isInstanceOf(IOException.class);
    }

    private Socket connect() throws IOException {
        return connect(proxy);
    }

    private static Socket connect(FaultProxy to) throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), to.port());
        s.setSoTimeout((int) HANG_GUARD.toMillis());
        return s;
    }

    private static void roundTrip(Socket s, String text) throws IOException {
        s.getOutputStream().write(text.getBytes(StandardCharsets.US_ASCII));
        assertThat(read(s, text.length())).isEqualTo(text);
    }

    private static String read(Socket s, int length) throws IOException {
        byte[] bytes = s.getInputStream().readNBytes(length);
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    /** Whether the connection ends (end of stream or a reset) before any byte arrives. */
    private static boolean endOfStream(Socket s) {
        try {
            return s.getInputStream().read() < 0;
        } catch (IOException e) {
            return !(e instanceof java.net.SocketTimeoutException);
        }
    }

    /** Echoes every byte back on each connection; counts what it received. */
    private static final class EchoServer implements AutoCloseable {
        final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final AtomicLong received = new AtomicLong();
        final AtomicLong accepted = new AtomicLong();

        EchoServer() throws IOException {
            Thread.ofVirtual().start(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket s = server.accept();
                        accepted.incrementAndGet();
                        Thread.ofVirtual().start(() -> echo(s));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
        }

        int port() {
            return server.getLocalPort();
        }

        private void echo(Socket s) {
            try (s) {
                InputStream in = s.getInputStream();
                OutputStream out = s.getOutputStream();
                byte[] buffer = new byte[4096];
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    received.addAndGet(n);
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException e) {
                // the proxy closed it
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
