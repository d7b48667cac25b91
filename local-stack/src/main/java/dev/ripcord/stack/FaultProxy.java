package dev.ripcord.stack;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A fault-injecting TCP proxy in the manner of Toxiproxy: it listens on a port of this host and forwards every
 * connection to an upstream {@code host:port}, byte for byte and in order, unless a fault is switched on:
 *
 * <ul>
 *   <li>{@link #latency}: every chunk read waits that long before it is forwarded, in each direction (order kept);</li>
 *   <li>{@link #reset()}: every open connection is closed at once with a TCP reset, on both sides; new ones work;</li>
 *   <li>{@link #partition}: nothing is forwarded in either direction, and a new connection is accepted but not
 *       connected upstream, until {@link #heal()}; what was read meanwhile is held, as TCP would retransmit it, and
 *       forwarded when the partition heals (a network partition that ends before the peers give up);</li>
 *   <li>{@link #timeout}: a partition after which a connection that still waits is closed (a partition the
 *       peers do not outlast);</li>
 *   <li>{@link #blackhole}: bytes are read and dropped; connections stay open (a peer that swallows everything).</li>
 * </ul>
 *
 * <p>One platform thread accepts; each connection has one virtual thread per direction. Counters
 * ({@link #bytesForwarded()}, {@link #bytesDropped()}, {@link #connectionsReset()}, {@link #openConnections()})
 * say what the proxy did, for tests and for a bench's summary.
 *
 * <p>Lifecycle: {@link #start} binds and accepts; {@link #close()} stops accepting and closes every connection;
 * idempotent. A connection is {@link ConnectionState#OPEN} until it is {@link ConnectionState#CLOSED}, once.
 */
public final class FaultProxy implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(FaultProxy.class);

    /** The faults, one at a time (latency adds to any of them). */
    public enum Fault { NONE, PARTITION, TIMEOUT, BLACKHOLE }

    /** A proxied connection's lifecycle: {@code OPEN -> CLOSED}, once. */
    public enum ConnectionState {
        OPEN, CLOSED;

        boolean canBecome(ConnectionState next) {
            return this == OPEN && next == CLOSED;
        }
    }

    private final String name;
    private final ServerSocket listener;
    private final String upstreamHost;
    private final int upstreamPort;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Object faultChanged = new Object();
    private volatile Fault fault = Fault.NONE;
    private volatile long faultSince;
    private volatile Duration timeout = Duration.ZERO;
    private volatile Duration latency = Duration.ZERO;
    private final AtomicLong forwarded = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong held = new AtomicLong();
    private final AtomicLong resets = new AtomicLong();
    private final AtomicLong accepted = new AtomicLong();
    private final Thread acceptor;
    private volatile boolean closed;

    private FaultProxy(String name, ServerSocket listener, String upstreamHost, int upstreamPort) {
        this.name = name;
        this.listener = listener;
        this.upstreamHost = upstreamHost;
        this.upstreamPort = upstreamPort;
        this.acceptor = Thread.ofPlatform().daemon().name("fault-proxy-" + name).start(this::acceptLoop);
    }

    /**
     * Listens on {@code listenPort} of the loopback interface (0: a free one) and forwards to
     * {@code upstreamHost:upstreamPort}.
     */
    public static FaultProxy start(String name, int listenPort, String upstreamHost, int upstreamPort) {
        try {
            ServerSocket listener = new ServerSocket();
            listener.setReuseAddress(true);
            listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), listenPort), 128);
            return new FaultProxy(name, listener, upstreamHost, upstreamPort);
        } catch (IOException e) {
            throw new UncheckedIOException("fault proxy " + name + " cannot listen on port " + listenPort, e);
        }
    }

    public String name() {
        return name;
    }

    /** The port it listens on. */
    public int port() {
        return listener.getLocalPort();
    }

    /** The upstream {@code host:port}. */
    public String upstream() {
        return upstreamHost + ":" + upstreamPort;
    }

    /** Adds {@code delay} before every chunk it forwards, each direction; {@link Duration#ZERO} for none. */
    public void latency(Duration delay) {
        latency = delay;
    }

    /** Stops forwarding (see the class comment) until {@link #heal()}. */
    public void partition() {
        setFault(Fault.PARTITION, Duration.ZERO);
    }

    /** A partition that closes each connection still waiting after {@code after}. */
    public void timeout(Duration after) {
        setFault(Fault.TIMEOUT, after);
    }

    /** Drops every byte read until {@link #heal()}; connections stay open. */
    public void blackhole() {
        setFault(Fault.BLACKHOLE, Duration.ZERO);
    }

    /** Ends the fault (not the latency): held bytes are forwarded, in order. */
    public void heal() {
        setFault(Fault.NONE, Duration.ZERO);
    }

    /** The fault now. */
    public Fault fault() {
        return fault;
    }

    /** Closes every open connection with a TCP reset (both sides); returns how many it closed. */
    public int reset() {
        int n = 0;
        for (Connection c : connections) {
            if (c.close(true)) {
                n++;
            }
        }
        log.info("fault proxy {}: reset {} connection(s)", name, n);
        return n;
    }

    private void setFault(Fault next, Duration after) {
        synchronized (faultChanged) {
            timeout = after;
            faultSince = System.nanoTime();
            fault = next;
            faultChanged.notifyAll();
        }
        log.info("fault proxy {} -> {}: {}{}", name, upstream(), next,
                next == Fault.TIMEOUT ? " (close after " + after + ")" : "");
    }

    /** Bytes forwarded, both directions. */
    public long bytesForwarded() {
        return forwarded.get();
    }

    /** Bytes dropped by a blackhole. */
    public long bytesDropped() {
        return dropped.get();
    }

    /** Bytes read and held by a partition, not yet forwarded. */
    public long bytesHeld() {
        return held.get();
    }

    /** Connections closed by {@link #reset()} or a {@link #timeout}. */
    public long connectionsReset() {
        return resets.get();
    }

    /** Connections accepted since the start. */
    public long connectionsAccepted() {
        return accepted.get();
    }

    /** Connections open now. */
    public int openConnections() {
        return connections.size();
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                if (!closed) {
                    log.warn("fault proxy {}: accept failed: {}", name, e.toString());
                }
                continue;
            }
            accepted.incrementAndGet();
            Connection c = new Connection(client);
            connections.add(c);
            Thread.ofVirtual().name("fault-proxy-" + name + "-conn").start(c::run);
        }
    }

    /**
     * Waits while a partition or timeout holds; false if the connection must close (a timeout ran out, or the proxy
     * closed).
     */
    private boolean awaitForwarding(Connection c) throws InterruptedException {
        synchronized (faultChanged) {
            while (!closed && c.state() == ConnectionState.OPEN
                    && (fault == Fault.PARTITION || fault == Fault.TIMEOUT)) {
                if (fault == Fault.TIMEOUT) {
                    long left = faultSince + timeout.toNanos() - System.nanoTime();
                    if (left <= 0) {
                        return false;
                    }
                    faultChanged.wait(Math.max(1, left / 1_000_000));
                } else {
                    faultChanged.wait();
                }
            }
            return !closed && c.state() == ConnectionState.OPEN;
        }
    }

    private final class Connection {
        private final Socket client;
        private volatile Socket upstream;
        private final AtomicReference<ConnectionState> state = new AtomicReference<>(ConnectionState.OPEN);

        Connection(Socket client) {
            this.client = client;
        }

        ConnectionState state() {
            return state.get();
        }

        void run() {
            try {
                // A partition holds a new connection before it reaches upstream.
                if (!awaitForwarding(this)) {
                    timedOut();
                    return;
                }
                Socket up = new Socket();
                up.connect(new InetSocketAddress(upstreamHost, upstreamPort), 10_000);
                if (selfConnected(up)) {
                    // Nothing listens upstream and the kernel picked the upstream port as this socket's own: TCP's
                    // simultaneous open joined the socket to itself. That is a refused upstream, not a peer.
                    log.info("fault proxy {}: upstream {} is not listening (self-connected); closing", name,
                            upstream());
                    up.close();
                    return;
                }
                up.setTcpNoDelay(true);
                client.setTcpNoDelay(true);
                upstream = up;
                if (state() == ConnectionState.CLOSED) {
                    up.close();
                    return;
                }
                Thread back = Thread.ofVirtual().name("fault-proxy-" + name + "-down")
                        .start(() -> pump(up, client));
                pump(client, up);
                back.join();
            } catch (IOException e) {
                // upstream refused or gone: the client sees its connection closed
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                close(false);
            }
        }

        private void timedOut() {
            close(true);
        }

        private void pump(Socket from, Socket to) {
            byte[] buffer = new byte[16 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                while (true) {
                    int n = in.read(buffer);
                    if (n < 0) {
                        // half-close: the other direction may still carry bytes
                        to.shutdownOutput();
                        return;
                    }
                    if (fault == Fault.BLACKHOLE) {
                        dropped.addAndGet(n);
                        continue;
                    }
                    held.addAndGet(n);
                    boolean go;
                    try {
                        go = awaitForwarding(this);
                    } finally {
                        held.addAndGet(-n);
                    }
                    if (!go) {
                        timedOut();
                        return;
                    }
                    Duration delay = latency;
                    if (!delay.isZero()) {
                        Thread.sleep(delay);
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                    forwarded.addAndGet(n);
                }
            } catch (IOException e) {
                close(false);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                close(false);
            }
        }

        /** Closes both sockets, with a reset (counted) if {@code reset}; true if this call closed it. */
        boolean close(boolean reset) {
            ConnectionState now = state.get();
            if (!now.canBecome(ConnectionState.CLOSED) || !state.compareAndSet(now, ConnectionState.CLOSED)) {
                return false;
            }
            if (reset) {
                // Counted before either side can see the connection end.
                resets.incrementAndGet();
            }
            connections.remove(this);
            closeSocket(client, reset);
            Socket up = upstream;
            if (up != null) {
                closeSocket(up, reset);
            }
            synchronized (faultChanged) {
                faultChanged.notifyAll();
            }
            return true;
        }
    }

    /** Whether {@code socket} is connected to itself (same address and port at both ends). */
    static boolean selfConnected(Socket socket) {
        return socket.getLocalPort() == socket.getPort()
                && socket.getLocalAddress().equals(socket.getInetAddress());
    }

    private static void closeSocket(Socket socket, boolean reset) {
        try {
            if (reset) {
                socket.setSoLinger(true, 0);
            }
        } catch (SocketException e) {
            // already closed
        }
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to do
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            listener.close();
        } catch (IOException e) {
            // nothing to do
        }
        for (Connection c : connections) {
            c.close(false);
        }
        synchronized (faultChanged) {
            faultChanged.notifyAll();
        }
        try {
            acceptor.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "FaultProxy[" + name + " :" + port() + " -> " + upstream() + ", " + fault + ", latency " + latency
                + "]";
    }
}
