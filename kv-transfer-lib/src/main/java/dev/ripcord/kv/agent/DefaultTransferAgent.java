package dev.ripcord.kv.agent;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ByteRange;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.ReceiveListener;
import dev.ripcord.kv.SessionListener;
import dev.ripcord.kv.SessionState;
import dev.ripcord.kv.Side;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.kv.TransferStats;
import dev.ripcord.kv.session.Checks;
import dev.ripcord.kv.session.DefaultKvRegion;
import dev.ripcord.kv.session.DefaultReceiveSession;
import dev.ripcord.kv.session.DefaultSendSession;
import dev.ripcord.kv.session.DrainWatchdog;
import dev.ripcord.kv.session.FenceSlots;
import dev.ripcord.kv.session.KvMetrics;
import dev.ripcord.kv.session.LiveResources;
import dev.ripcord.kv.session.SessionFence;
import dev.ripcord.kv.session.SessionHost;
import dev.ripcord.kv.session.TargetMap;
import dev.ripcord.kv.shm.FenceTable;
import dev.ripcord.kv.shm.HostIdentity;
import dev.ripcord.kv.shm.PeerProcess;
import dev.ripcord.kv.shm.RefusedShmFileException;
import dev.ripcord.kv.shm.SharedRegionFile;
import dev.ripcord.kv.shm.ShmFiles;
import dev.ripcord.kv.transport.shm.ShmMappings;
import dev.ripcord.kv.transport.shm.ShmCopier;
import dev.ripcord.kv.transport.tcp.TcpPump;
import dev.ripcord.kv.transport.tcp.ConnectionCap;
import dev.ripcord.kv.transport.tcp.ConnectionHost;
import dev.ripcord.kv.transport.tcp.ConnectionPool;
import dev.ripcord.kv.transport.tcp.ReceiverConnection;
import dev.ripcord.kv.transport.tcp.SenderConnection;
import dev.ripcord.kv.wire.FrameType;
import dev.ripcord.kv.wire.Frames;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link TransferAgent} implementation (the contract is on the interface): the one place that wires the
 * library's parts together — the regions and sessions of {@code kv.session}, the TCP transport's listener,
 * connections and pumps ({@code kv.transport.tcp}), the shared-memory copier and mappings
 * ({@code kv.transport.shm}), the fence table. Sessions and connections see it only through the narrow
 * {@link SessionHost} and {@link ConnectionHost} views.
 */
public final class DefaultTransferAgent implements TransferAgent {
    private static final Logger log = LoggerFactory.getLogger(DefaultTransferAgent.class);

    private final TransferAgentOptions options;
    private final long incarnation;
    private final KvMetrics metrics;
    private volatile SessionListener sessionListener = SessionListener.NONE;
    private final FenceTable fences;
    private final Frames.Hello hello;
    private final EventLoopGroup eventLoops;
    private final ConnectionCap connectionCap;
    private final Channel serverChannel;
    private final InetSocketAddress listenAddress;
    private final String advertisedHost;
    private final ShmMappings shmMappings;
    private final Map<Long, DefaultKvRegion> regions = new ConcurrentHashMap<>();
    private final Map<Long, DefaultReceiveSession> receiveSessions = new ConcurrentHashMap<>();
    private final CancelledSessions cancelledSessions = new CancelledSessions();
    private final Set<DefaultSendSession> sendSessions = ConcurrentHashMap.newKeySet();
    private final ConnectionPool<SenderConnection> senderConnections;
    private final Set<ReceiverConnection> receiverConnections = ConcurrentHashMap.newKeySet();
    private final AtomicLong regionIds = new AtomicLong();
    private final AtomicLong sessionIds = new AtomicLong();
    private final FenceSlots fenceSlots;
    private final AtomicLongArray framesReceived = new AtomicLongArray(FrameType.values().length);
    private final DrainWatchdog drainWatchdog;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final SecureRandom tokens = new SecureRandom();
    private final long trackingId;
    private final Host host = new Host();

    private DefaultTransferAgent(TransferAgentOptions options) {
        this.options = options;
        long inc = 0;
        SecureRandom random = new SecureRandom();
        while (inc == 0) {
            inc = random.nextLong();
        }
        this.incarnation = inc;
        this.shmMappings = new ShmMappings(options.shmDirectory());
        PeerProcess self = PeerProcess.current();
        this.fences = options.backend() == Backend.TCP ? null : createFenceTable(options, self, inc);
        this.fenceSlots = new FenceSlots(fences == null ? 0 : fences.slots());
        this.hello = new Frames.Hello(inc, self.pid(), self.startMillis(), (int) options.lease().toMillis(),
                HostIdentity.local(), options.name());
        this.metrics = new KvMetrics(options.meterRegistry(), options.name());
        this.eventLoops = new MultiThreadIoEventLoopGroup(options.ioThreads(),
                new DefaultThreadFactory("kv-" + options.name(), true), NioIoHandler.newFactory());
        this.connectionCap = new ConnectionCap(options.name(), options.maxConnections(), metrics);
        try {
            serverChannel = new ServerBootstrap().group(eventLoops).channel(NioServerSocketChannel.class)
                    .handler(connectionCap)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ReceiverConnection c = new ReceiverConnection(host);
                            // Large payload reads go straight into the destination region (no user-space copy).
                            ch.config().setRecvByteBufAllocator(
                                    c.directLanding(new AdaptiveRecvByteBufAllocator(4096, 64 * 1024, 1 << 20)));
                            ch.pipeline().addLast(c);
                        }
                    })
                    .bind(options.bindHost(), options.port()).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            if (fences != null) {
                fences.close();
            }
            metrics.close();
            throw new UncheckedIOException(new IOException("agent " + options.name() + " cannot listen on "
                    + options.bindHost() + ":" + options.port(), e));
        }
        this.listenAddress = (InetSocketAddress) serverChannel.localAddress();
        this.advertisedHost = options.advertisedHost() != null ? options.advertisedHost()
                : listenAddress.getAddress().isAnyLocalAddress() ? HostIdentity.hostname()
                : listenAddress.getAddress().getHostAddress();
        this.senderConnections = new ConnectionPool<>((key, peerHost, port) -> SenderConnection.open(host, key,
                peerHost, port));
        this.drainWatchdog = new DrainWatchdog(task -> eventLoops.isShuttingDown() ? null
                : eventLoops.next().scheduleAtFixedRate(task, 1, 1, TimeUnit.MILLISECONDS),
                options.lease().toNanos(), System::nanoTime);
        this.trackingId = LiveResources.track(LiveResources.Kind.AGENT, this::toString);
        log.info("agent {} listening on {} (advertised {}), shared memory {}", options.name(), listenAddress,
                advertisedHost, fences != null ? "offered in " + options.shmDirectory() : "off");
    }

    /** What {@link TransferAgent#start} finds (META-INF/services): starts a {@link DefaultTransferAgent}. */
    public static final class Provider implements TransferAgent.Provider {
        @Override
        public TransferAgent start(TransferAgentOptions options) {
            return new DefaultTransferAgent(Objects.requireNonNull(options, "options"));
        }
    }

    private static FenceTable createFenceTable(TransferAgentOptions options, PeerProcess self, long inc) {
        try {
            ShmFiles.sweepStale(options.shmDirectory());
            return FenceTable.create(ShmFiles.fenceFile(options.shmDirectory(), self.pid(), inc), inc,
                    options.fenceSlots());
        } catch (IOException | RuntimeException e) {
            if (options.backend() == Backend.SHM) {
                throw new UncheckedIOException(new IOException("agent " + options.name()
                        + ": shared memory required but " + options.shmDirectory() + " is unusable", e));
            }
            log.info("agent {}: shared memory unavailable in {} ({}); TCP only", options.name(),
                    options.shmDirectory(), e.toString());
            return null;
        }
    }

    @Override
    public String name() {
        return options.name();
    }

    @Override
    public TransferAgentOptions options() {
        return options;
    }

    /** The bound TCP address (with the real port when the configured one was 0). */
    @Override
    public InetSocketAddress listenAddress() {
        return listenAddress;
    }

    /** True when regions allocated by this agent are shared-memory files a same-host sender can write into. */
    @Override
    public boolean offersSharedMemory() {
        return fences != null;
    }

    // ---- regions ----------------------------------------------------------------------------------------------

    /**
     * Allocates {@code bytes} of page-aligned memory owned by the agent: a shared-memory file when the agent offers
     * that backend, else a shared arena. Use its {@link DefaultKvRegion#segment()} as the engine's page pool.
     */
    @Override
    public DefaultKvRegion allocateRegion(long bytes) {
        requireOpen();
        Checks.requireArgument(bytes > 0, "region of %s bytes", bytes);
        long id = regionIds.incrementAndGet();
        DefaultKvRegion region = null;
        if (fences != null) {
            try {
                SharedRegionFile file = SharedRegionFile.create(
                        ShmFiles.regionFile(options.shmDirectory(), hello.pid(), incarnation, id), incarnation, id,
                        bytes);
                region = new DefaultKvRegion(this, id, file.data(), null, file, this::regionReleased);
            } catch (IOException e) {
                if (options.backend() == Backend.SHM) {
                    throw new UncheckedIOException(e);
                }
                log.info("agent {}: region {} falls back to private memory: {}", name(), id, e.toString());
            }
        }
        if (region == null) {
            Arena arena = Arena.ofShared();
            region = new DefaultKvRegion(this, id, arena.allocate(bytes, 4096), arena, null, this::regionReleased);
        }
        return registered(region);
    }

    /**
     * Registers memory the caller owns (e.g. the engine's page pool). The segment must be native and accessible
     * from any thread (a shared, auto or global arena). The caller must not free it before
     * {@link DefaultKvRegion#released()} completes. Such regions travel over TCP only.
     */
    @Override
    public DefaultKvRegion registerRegion(MemorySegment segment) {
        requireOpen();
        Objects.requireNonNull(segment, "segment");
        Checks.requireArgument(segment.isNative() && segment.byteSize() > 0, "region segment must be native and "
                + "non-empty");
        Checks.requireArgument(segment.isAccessibleBy(Thread.ofVirtual().unstarted(() -> { })),
                "region segment must be accessible from transport threads (Arena.ofShared, ofAuto or global)");
        return registered(new DefaultKvRegion(this, regionIds.incrementAndGet(), segment, null, null,
                this::regionReleased));
    }

    private DefaultKvRegion registered(DefaultKvRegion region) {
        regions.put(region.id(), region);
        metrics.liveRegions.incrementAndGet();
        metrics.liveRegionBytes.addAndGet(region.byteSize());
        if (closed.get()) {
            region.close();
        }
        return region;
    }

    private SessionHost.RegionSpan regionContaining(MemorySegment slice) {
        Checks.requireArgument(slice.isNative(), "source slice must be native memory");
        for (DefaultKvRegion r : regions.values()) {
            long offset = slice.address() - r.segment().address();
            if (offset >= 0 && offset <= r.byteSize() - slice.byteSize()) {
                return new SessionHost.RegionSpan(r, offset);
            }
        }
        throw new IllegalArgumentException("slice at 0x" + Long.toHexString(slice.address())
                + " lies in no region registered with agent " + name());
    }

    // ---- receive ----------------------------------------------------------------------------------------------

    /**
     * Opens a receive session into {@code targets} of {@code region} (the request's reserved pages; the sender's
     * offsets address their concatenation in list order). Hand {@link DefaultReceiveSession#descriptor()} to the sender.
     * If no sender attaches within the attach timeout the session aborts (ATTACH_TIMEOUT).
     *
     * @throws IllegalArgumentException targets out of the region or overlapping
     * @throws IllegalStateException    the region or the agent is closed
     */
    @Override
    public DefaultReceiveSession openReceive(String requestId, KvRegion target, List<ByteRange> targets,
                                      ReceiveListener listener) {
        requireOpen();
        Objects.requireNonNull(requestId, "requestId");
        Objects.requireNonNull(listener, "listener");
        DefaultKvRegion region = host.own(target);
        Checks.requireArgument(region != null, "region %s belongs to agent %s", target.id(), target.agent().name());
        TargetMap map = new TargetMap(targets, region.byteSize());
        // The session's targets hold the region (by identity: released once, by the session's release).
        Checks.requireState(region.retain(map), "request %s: region %s is closed", requestId, region.id());
        long sessionId = sessionIds.incrementAndGet();
        int slot = region.isSharedMemory() ? allocateFenceSlot(requestId) : -1;
        long epoch = slot >= 0 ? fences.openSlot(slot) : 0;
        boolean shm = slot >= 0;
        ReceiveDescriptor d = new ReceiveDescriptor(requestId, name(), incarnation, advertisedHost,
                listenAddress.getPort(), shm ? HostIdentity.local() : null,
                shm ? region.sharedFile().path().toString() : null, shm ? fences.path().toString() : null, slot,
                epoch, sessionId, tokens.nextLong(), region.id(), targets, map.totalBytes());
        SessionFence fence = shm ? new SessionFence.Slot(fences, fenceSlots, slot,
                fenceSlots.generation(slot), epoch) : SessionFence.NONE;
        DefaultReceiveSession s = new DefaultReceiveSession(host, d, region, map, listener, fence);
        receiveSessions.put(sessionId, s);
        metrics.liveSessions.incrementAndGet();
        metrics.liveSessionBytes.addAndGet(map.totalBytes());
        long timeout = options.attachTimeout().toNanos();
        s.armAttachTimer(eventLoops.next().schedule(() -> s.abort(new AbortReason(AbortReason.Cause.ATTACH_TIMEOUT,
                Side.RECEIVER, "no sender attached within " + options.attachTimeout()), false), timeout,
                TimeUnit.NANOSECONDS));
        if (closed.get()) {
            s.abort(new AbortReason(AbortReason.Cause.AGENT_CLOSED, Side.RECEIVER, "agent closing"), false);
        }
        log.debug("request={} session={} open: {}", requestId, sessionId, d);
        return s;
    }

    private int allocateFenceSlot(String requestId) {
        int slot = fenceSlots.allocate();
        if (slot < 0) {
            log.warn("request={} agent {}: all {} fence slots in use; the transfer is offered TCP only", requestId,
                    name(), fenceSlots.capacity());
        }
        return slot;
    }

    /** Connections the listener holds now (the cap's count). */
    public int listenerConnections() {
        return connectionCap.open();
    }

    /** Peers' shared-memory files this agent maps now, as a sender. */
    public int sharedFilesMapped() {
        return shmMappings.mappedFiles();
    }

    /** Receive sessions quarantined now: aborted, but a live shared-memory writer is still inside their fence. */
    public int drainsQuarantined() {
        return drainWatchdog.quarantined();
    }

    /** Fence slots held by sessions; with a consistency check that no slot was freed twice. */
    public int fenceSlotsInUse() {
        return fenceSlots.inUse();
    }

    /**
     * Frames of {@code type} this agent's connections have read, over its lifetime (DATA counted per frame); for
     * tests that count the control round trips a transfer costs.
     */
    public long framesReceived(FrameType type) {
        return framesReceived.get(type.ordinal());
    }

    // ---- send -------------------------------------------------------------------------------------------------

    /**
     * Connects a send session to the receive session a descriptor names. Never blocks: the connection to the
     * receiving agent (shared by all sessions to it) is made or reused in the background, and writes queue until
     * it is up. If it cannot be made, the session aborts (PEER_UNREACHABLE). The backend is chosen here: see
     * {@link Backend#AUTO}.
     *
     * @throws IllegalStateException    the agent is closed, or this descriptor is already connected
     * @throws IllegalArgumentException the backend is SHM and the descriptor cannot be reached that way
     */
    @Override
    public DefaultSendSession connect(ReceiveDescriptor descriptor) {
        requireOpen();
        Objects.requireNonNull(descriptor, "descriptor");
        ShmMappings.Target shmTarget = null;
        boolean sameHost = descriptor.offersSharedMemory() && HostIdentity.local().equals(descriptor.shmHost());
        if (options.backend() == Backend.SHM) {
            Checks.requireArgument(sameHost, "request %s: backend SHM but the receiver offers no shared memory on "
                    + "this host", descriptor.requestId());
        }
        if (sameHost && options.backend() != Backend.TCP) {
            try {
                shmTarget = shmMappings.acquire(descriptor);
            } catch (IOException | RuntimeException e) {
                if (options.backend() == Backend.SHM) {
                    throw new IllegalArgumentException("request " + descriptor.requestId()
                            + ": cannot map the receiver's shared memory", e);
                }
                if (e instanceof RefusedShmFileException) {
                    // a peer named a file it may not: another directory than ours, or an attempt at one
                    log.warn("request={} {}; using TCP", descriptor.requestId(), e.getMessage());
                } else {
                    log.debug("request={} shared memory not usable ({}); using TCP", descriptor.requestId(),
                            e.toString());
                }
            }
        }
        SenderConnection c = senderConnections.connectionTo(descriptor.tcpHost(), descriptor.tcpPort());
        ShmMappings.Target shm = shmTarget;
        DefaultSendSession s = new DefaultSendSession(host, descriptor, c, session -> shm == null ? new TcpPump(session, c)
                : new ShmCopier(session, c, shm, options.shmPieceBytes(), hello.pid()));
        sendSessions.add(s);
        metrics.liveSessions.incrementAndGet();
        metrics.liveSessionBytes.addAndGet(descriptor.totalBytes());
        try {
            c.attach(s);
        } catch (IllegalStateException e) {
            s.onConnectionLost(new AbortReason(AbortReason.Cause.PROTOCOL_ERROR, Side.SENDER, e.getMessage()));
            throw e;
        }
        if (closed.get()) {
            s.abortForClose();
        }
        log.debug("request={} session={} connecting to {} over {}", descriptor.requestId(),
                descriptor.sessionId(), descriptor.agentName(), s.backend());
        return s;
    }

    // ---- bookkeeping called by sessions, regions and connections -----------------------------------------------

    /**
     * The agent as its sessions and connections see it: a narrow view ({@link SessionHost}, {@link ConnectionHost})
     * instead of the whole agent.
     */
    private final class Host implements SessionHost, ConnectionHost {
        @Override
        public String agentName() {
            return options.name();
        }

        @Override
        public KvMetrics metrics() {
            return metrics;
        }

        @Override
        public SessionListener sessionListener() {
            return sessionListener;
        }

        @Override
        public DefaultKvRegion own(KvRegion region) {
            return region instanceof DefaultKvRegion r && r.agent() == DefaultTransferAgent.this ? r : null;
        }

        @Override
        public RegionSpan regionContaining(MemorySegment slice) {
            return DefaultTransferAgent.this.regionContaining(slice);
        }

        @Override
        public void watchDrain(DrainWatchdog.Drain drain) {
            drainWatchdog.watch(drain);
        }

        @Override
        public void released(DefaultSendSession s, SessionState terminal, long abortStartNanos) {
            sendSessions.remove(s);
            metrics.liveSessions.decrementAndGet();
            metrics.liveSessionBytes.addAndGet(-s.descriptor().totalBytes());
            metrics.sessionReleased(Side.SENDER, terminal, abortStartNanos);
        }

        @Override
        public void released(DefaultReceiveSession s, SessionState terminal, long abortStartNanos) {
            cancelledSessions.released(s.sessionId(), s.descriptor().attachToken(), s.abortReason().orElse(null));
            receiveSessions.remove(s.sessionId(), s);
            metrics.liveSessions.decrementAndGet();
            metrics.liveSessionBytes.addAndGet(-s.descriptor().totalBytes());
            metrics.sessionReleased(Side.RECEIVER, terminal, abortStartNanos);
        }

        @Override
        public Frames.Hello hello() {
            return hello;
        }

        @Override
        public Duration lease() {
            return options.lease();
        }

        @Override
        public Duration connectTimeout() {
            return options.connectTimeout();
        }

        @Override
        public int maxPieceBytes() {
            return options.maxPieceBytes();
        }

        @Override
        public EventLoopGroup eventLoops() {
            return eventLoops;
        }

        @Override
        public void frameReceived(FrameType type) {
            framesReceived.incrementAndGet(type.ordinal());
        }

        @Override
        public void leaseExpired() {
            metrics.leaseExpired();
        }

        @Override
        public DefaultReceiveSession receiveSession(long sessionId) {
            return receiveSessions.get(sessionId);
        }

        @Override
        public AbortReason releasedForCancel(long sessionId, long attachToken) {
            return cancelledSessions.refusal(sessionId, attachToken);
        }

        @Override
        public void opened(ReceiverConnection c) {
            receiverConnections.add(c);
            if (closed.get()) {
                c.close(new AbortReason(AbortReason.Cause.AGENT_CLOSED, Side.RECEIVER, "agent closing"));
            }
        }

        @Override
        public void closed(ReceiverConnection c) {
            receiverConnections.remove(c);
        }

        @Override
        public void closed(SenderConnection c) {
            senderConnections.remove(c.key(), c);
        }

        @Override
        public void regionRetired(long receiverIncarnation, long regionId) {
            shmMappings.retireRegion(receiverIncarnation, regionId);
        }

        @Override
        public void receiverGone(long receiverIncarnation) {
            shmMappings.retireAgent(receiverIncarnation);
        }
    }

    /** A region released (each region calls this once): drop it, and tell same-host senders to unmap its file. */
    private void regionReleased(DefaultKvRegion r) {
        regions.remove(r.id(), r);
        metrics.liveRegions.decrementAndGet();
        metrics.liveRegionBytes.addAndGet(-r.byteSize());
        if (r.isSharedMemory()) {
            receiverConnections.forEach(c -> c.writeRegionClosed(r.id()));
        }
    }

    /**
     * Tells {@code listener} about every session this agent opens from now on: opened, then each state it enters
     * (the worker's lifecycle log). One listener; {@code null} removes it.
     */
    @Override
    public void onSession(SessionListener listener) {
        this.sessionListener = listener == null ? SessionListener.NONE : listener;
    }

    /** Live regions, sessions and bytes of this agent (also exported as gauges). */
    @Override
    public TransferStats stats() {
        return new TransferStats(metrics.liveRegions.get(), metrics.liveRegionBytes.get(),
                metrics.liveSessions.get(), metrics.liveSessionBytes.get(),
                senderConnections.size() + receiverConnections.size());
    }

    private void requireOpen() {
        Checks.requireState(!closed.get(), "agent %s is closed", name());
    }

    // ---- close ------------------------------------------------------------------------------------------------

    /**
     * Aborts every live session (AGENT_CLOSED), closes every region, waits up to the close timeout for them to
     * drain and release, then closes connections and threads. A receive session still waiting on a live
     * shared-memory writer at that point is released anyway: its memory is the agent's own mapping, which is
     * unmapped, so a late write can only reach the (deleted) file's pages, never memory reused by anyone.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        log.info("agent {} closing: {} receive session(s), {} send session(s), {} region(s)", name(),
                receiveSessions.size(), sendSessions.size(), regions.size());
        sendSessions.forEach(DefaultSendSession::abortForClose);
        receiveSessions.values().forEach(s -> s.abort(new AbortReason(AbortReason.Cause.AGENT_CLOSED,
                Side.RECEIVER, "agent " + name() + " closing"), true));
        regions.values().forEach(DefaultKvRegion::close);
        awaitDrained(options.closeTimeout().toNanos());
        AbortReason closing = new AbortReason(AbortReason.Cause.AGENT_CLOSED, Side.RECEIVER, "agent closing");
        senderConnections.all().forEach(c -> c.close(closing));
        receiverConnections.forEach(c -> c.close(closing));
        awaitDrained(TimeUnit.SECONDS.toNanos(1)); // writes stuck on a dead socket fail on close
        serverChannel.close().awaitUninterruptibly();
        eventLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly();
        receiveSessions.values().forEach(DefaultReceiveSession::forceRelease);
        if (!sendSessions.isEmpty()) {
            log.warn("agent {}: {} send session(s) still hold source pins after close: {}", name(),
                    sendSessions.size(), sendSessions);
        }
        regions.values().forEach(DefaultKvRegion::close);
        if (fences != null) {
            fences.close();
        }
        shmMappings.closeAll();
        // What close could not release (0 and 0 when every session and region went back): a shutdown's last word.
        long sessionsLeft = metrics.liveSessions.get();
        long regionsLeft = metrics.liveRegions.get();
        metrics.close();
        LiveResources.untrack(trackingId);
        log.info("agent {} closed: liveSessions={} liveRegions={}", name(), sessionsLeft, regionsLeft);
    }

    private void awaitDrained(long nanos) {
        long deadline = System.nanoTime() + nanos;
        while ((!sendSessions.isEmpty() || !receiveSessions.isEmpty() || !regions.isEmpty())
                && System.nanoTime() < deadline) {
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public String toString() {
        return "DefaultTransferAgent[" + name() + " @ " + advertisedHost + ":" + listenAddress.getPort() + ", "
                + (closed.get() ? "closed" : "open") + "]";
    }
}
