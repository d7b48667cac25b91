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
 *   <li>{@link #blackhole}: bytes are read and dropped; connections stay open (a peer that swallows everything);</li>
 *   <li>{@link #drop}: a partition that drops: a new connection is refused (accepted and reset at once), every byte
 *       read on an open one is dropped in either direction, and neither side learns that the other closed (a peer
 *       that gives up on a connection, say at its request timeout, is counted: {@link #clientsGaveUp()}); when the
 *       partition heals, every connection that lost a byte or a close is reset, as a connection whose
 *       retransmissions ran out is, and the others go on (a partition that the peers outlast where they sent
 *       nothing, and do not where they did).</li>
 * </ul>
 *
 * <p>One platform thread accepts; each connection has one virtual thread per direction. Counters
 * ({@link #bytesForwarded()}, {@link #bytesDropped()}, {@link #connectionsReset()}, {@link #connectionsRefused()},
 * {@link #clientsGaveUp()}, {@link #connectionsCutOnHeal()}, {@link #openConnections()}) say what the proxy did, for
 * tests and for a bench's summary.
 *
 * <p>Lifecycle: {@link #start} binds and accepts; {@link #close()} stops accepting and closes every connection;
 * idempotent. A connection is {@link ConnectionState#OPEN} until it is {@link ConnectionState#CLOSED}, once.
 */
public final class FaultProxy implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(FaultProxy.class);

    /** The faults, one at a time (latency adds to any of them). */
    public enum Fault { NONE, PARTITION, TIMEOUT, BLACKHOLE, DROP }

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
    private final AtomicLong refused = new AtomicLong();
    private final AtomicLong gaveUp = new AtomicLong();
    private final AtomicLong cutOnHeal = new AtomicLong();
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

    /** A partition that drops (see the class comment) until {@link #heal()}. */
    public void drop() {
        setFault(Fault.DROP, Duration.ZERO);
    }

    /**
     * Ends the fault (not the latency): held bytes are forwarded, in order; after {@link #drop}, every connection
     * that lost bytes or a close is reset.
     */
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
        Fault before;
        synchronized (faultChanged) {
            before = fault;
            timeout = after;
            faultSince = System.nanoTime();
            fault = next;
            faultChanged.notifyAll();
        }
        if (before == Fault.DROP && next != Fault.DROP) {
            int cut = 0;
            for (Connection c : connections) {
                if (c.broken && c.close(false, true)) {
                    cut++;
                }
            }
            cutOnHeal.addAndGet(cut);
            log.info("fault proxy {}: {} connection(s) that lost bytes in the partition reset", name, cut);
        }
        log.info("fault proxy {} -> {}: {}{}", name, upstream(), next,
                next == Fault.TIMEOUT ? " (close after " + after + ")" : "");
    }

    /** Bytes forwarded, both directions. */
    public long bytesForwarded() {
        return forwarded.get();
    }

    /** Bytes dropped by a blackhole or a dropping partition. */
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

    /** Connections refused (accepted and reset at once) by a dropping partition. */
    public long connectionsRefused() {
        return refused.get();
    }

    /**
     * Connections whose client side closed (or reset) while a dropping partition cut them: the client gave up on
     * them, at one of its timeouts.
     */
    public long clientsGaveUp() {
        return gaveUp.get();
    }

    /** Connections reset when a dropping partition healed, because they had lost bytes or a close in it. */
    public long connectionsCutOnHeal() {
        return cutOnHeal.get();
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
        /** Lost a byte or a close to a dropping partition: it cannot go on once the partition heals. */
        private volatile boolean broken;

        Connection(Socket client) {
            this.client = client;
        }

        ConnectionState state() {
            return state.get();
        }

        void run() {
            try {
                if (fault == Fault.DROP) {
                    refused.incrementAndGet();
                    close(false, true);
                    return;
                }
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
                        .start(() -> pump(up, client, false));
                pump(client, up, true);
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

        private void pump(Socket from, Socket to, boolean fromClient) {
            byte[] buffer = new byte[16 * 1024];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                while (true) {
                    int n;
                    try {
                        n = in.read(buffer);
                    } catch (IOException e) {
                        if (lostToDrop(fromClient)) {
                            return;
                        }
                        throw e;
                    }
                    if (n < 0) {
                        if (lostToDrop(fromClient)) {
                            return; // the close is lost too: the other side learns of it when the partition heals
                        }
                        // half-close: the other direction may still carry bytes
                        to.shutdownOutput();
                        return;
                    }
                    if (fault == Fault.DROP) {
                        dropped.addAndGet(n);
                        broken = true;
                        continue;
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

        /**
         * Whether a dropping partition swallows the end of this direction (its side closed or failed): counted as a
         * client that gave up when {@code fromClient}; the connection is then broken, reset when the partition heals.
         */
        private boolean lostToDrop(boolean fromClient) {
            if (fault != Fault.DROP || state() != ConnectionState.OPEN) {
                return false;
            }
            if (fromClient) {
                gaveUp.incrementAndGet();
            }
            broken = true;
            return true;
        }

        /** Closes both sockets, with a reset (counted) if {@code reset}; true if this call closed it. */
        boolean close(boolean reset) {
            return close(reset, reset);
        }

        /**
         * Closes both sockets, with a TCP reset if {@code rst}, counted among {@link #connectionsReset()} if
         * {@code countReset}; true if this call closed it.
         */
        boolean close(boolean countReset, boolean rst) {
            ConnectionState now = state.get();
            if (!now.canBecome(ConnectionState.CLOSED) || !state.compareAndSet(now, ConnectionState.CLOSED)) {
                return false;
            }
            if (countReset) {
                // Counted before either side can see the connection end.
                resets.incrementAndGet();
            }
            connections.remove(this);
            closeSocket(client, rst);
            Socket up = upstream;
            if (up != null) {
                closeSocket(up, rst);
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
