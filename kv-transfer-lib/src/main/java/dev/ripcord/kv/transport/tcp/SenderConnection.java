package dev.ripcord.kv.transport.tcp;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.Backend;
import dev.ripcord.kv.ReceiveDescriptor;
import dev.ripcord.kv.Side;
import dev.ripcord.kv.session.Checks;
import dev.ripcord.kv.session.DefaultSendSession;
import dev.ripcord.kv.session.SendLink;
import dev.ripcord.kv.session.WriteOp;
import dev.ripcord.kv.wire.FrameDecoder;
import dev.ripcord.kv.wire.FrameType;
import dev.ripcord.kv.wire.Frames;
import dev.ripcord.kv.wire.ProtocolException;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sending agent's connection to one receiving agent, shared by all sessions to it.
 *
 * <p>Design note. Everything that goes out runs on the channel's event loop, queued until the receiver's HELLO
 * arrived, so frames leave in the order they were submitted (ATTACH before a session's data, every data frame of
 * a session before its COMPLETE). Writes are cut into pieces and pumped round-robin across sessions while the
 * channel is writable: one big transfer cannot starve the others, outbound memory stays bounded by the water
 * mark, and an abort stops a session at the next piece boundary. A piece's payload is the source segment itself
 * wrapped as a buffer, so the only copy on this side is the kernel's.
 */
public final class SenderConnection extends FrameDecoder implements ConnectionPool.Pooled, SendLink {
    private static final Logger log = LoggerFactory.getLogger(SenderConnection.class);

    private final ConnectionHost host;
    private final String key;
    private final Map<Long, DefaultSendSession> sessions = new ConcurrentHashMap<>();
    private volatile Channel channel;
    private volatile boolean closed;
    private volatile Frames.Hello peer;
    // event-loop confined
    private boolean ready;
    private final List<Runnable> untilReady = new ArrayList<>();
    private final ArrayDeque<TcpPump> readyQueue = new ArrayDeque<>();
    private long lastReadNanos = System.nanoTime();
    private ScheduledFuture<?> ticker;
    private boolean flushScheduled;

    private SenderConnection(ConnectionHost host, String key, String peerHost, int port) {
        this.host = host;
        this.key = key;
        int piece = host.maxPieceBytes();
        ChannelFuture connecting = new Bootstrap().group(host.eventLoops()).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) host.connectTimeout().toMillis())
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(2 * piece, 4 * piece))
                .handler(this)
                .connect(peerHost, port);
        channel = connecting.channel();
        connecting.addListener(f -> {
            if (!f.isSuccess()) {
                close(new AbortReason(AbortReason.Cause.PEER_UNREACHABLE, Side.SENDER,
                        "cannot connect to " + peerHost + ":" + port + ": " + f.cause()));
            }
        });
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        channel = ctx.channel(); // may run before the constructor has stored the channel
        super.handlerAdded(ctx);
    }

    public static SenderConnection open(ConnectionHost host, String key, String peerHost, int port) {
        return new SenderConnection(host, key, peerHost, port);
    }

    public String key() {
        return key;
    }

    @Override
    public boolean isClosed() {
        return closed;
    }

    boolean isWritable() {
        Channel ch = channel;
        return ch != null && ch.isWritable();
    }

    /** Registers a session and sends its ATTACH (after the handshake). */
    public void attach(DefaultSendSession s) {
        Checks.requireState(sessions.putIfAbsent(s.sessionId(), s) == null,
                "request %s: session %s of %s is already connected", s.requestId(), s.sessionId(),
                s.descriptor().agentName());
        if (closed) {
            s.onConnectionLost(new AbortReason(AbortReason.Cause.PEER_UNREACHABLE, Side.SENDER,
                    "connection to " + key + " closed"));
            return;
        }
        boolean shm = s.backend() == Backend.SHM;
        ReceiveDescriptor d = s.descriptor();
        submit(() -> {
            if (peer.incarnation() != d.agentIncarnation()) {
                s.onConnectionLost(new AbortReason(AbortReason.Cause.PEER_UNREACHABLE, Side.SENDER,
                        "receiver " + d.agentName() + " restarted since the descriptor was made"));
                return;
            }
            channel.write(Frames.attach(channel.alloc(), d.sessionId(), d.attachToken(), d.epoch(), shm),
                    channel.voidPromise());
            flushSoon();
        });
    }

    @Override
    public void unbind(DefaultSendSession s) {
        sessions.remove(s.sessionId(), s);
    }

    int sessionCount() {
        return sessions.size();
    }

    // ---- outbound ---------------------------------------------------------------------------------------------

    void schedulePump(TcpPump s) {
        submit(() -> {
            if (!s.inReadyQueue) {
                s.inReadyQueue = true;
                readyQueue.add(s);
            }
            pump();
        });
    }

    private void pump() {
        int maxPiece = host.maxPieceBytes();
        boolean wrote = false;
        while (channel.isWritable() && !readyQueue.isEmpty()) {
            TcpPump s = readyQueue.poll();
            TcpPump.Piece p = s.nextPiece(maxPiece);
            if (p == null) {
                s.inReadyQueue = false;
                continue;
            }
            long sessionId = s.session().sessionId();
            if (p.isComplete()) {
                channel.write(Frames.complete(channel.alloc(), sessionId, p.completeTotal(), p.metadata()),
                        channel.voidPromise());
            } else {
                WriteOp op = p.op();
                channel.write(Frames.dataHeader(channel.alloc(), sessionId, op.writeId(),
                        op.dstOffset() + p.offset(), (int) p.length(), p.last()), channel.voidPromise());
                // Zero copy: the socket reads the source segment itself. Pinned until this write completes.
                ByteBuf payload = Unpooled.wrappedBuffer(op.sourceSegment()
                        .asSlice(op.sourceOffsetAt(p.offset()), p.length()).asByteBuffer());
                channel.write(payload).addListener(f -> s.pieceWritten(op));
            }
            wrote = true;
            if (s.hasPendingPieces()) {
                readyQueue.add(s);
            } else {
                s.inReadyQueue = false;
            }
        }
        if (wrote) {
            channel.flush();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            pump();
        }
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void writeShmWritten(long sessionId, long writeId, long dstOffset, long length) {
        write(a -> Frames.shmWritten(a, sessionId, writeId, dstOffset, length));
    }

    @Override
    public void writeComplete(long sessionId, long total, byte[] metadata) {
        write(a -> Frames.complete(a, sessionId, total, metadata));
    }

    @Override
    public void writeAbort(long sessionId, AbortReason reason) {
        write(a -> Frames.abort(a, sessionId, reason.cause().ordinal(), reason.detail(),
                reason.cancel() == null ? null : reason.cancel().reason(),
                reason.cancel() == null ? null : reason.cancel().source()));
    }

    @Override
    public void writeAbortAck(long sessionId) {
        write(a -> Frames.abortAck(a, sessionId));
    }

    private void write(Function<ByteBufAllocator, ByteBuf> frame) {
        submit(() -> {
            channel.write(frame.apply(channel.alloc()), channel.voidPromise());
            flushSoon();
        });
    }

    /**
     * Event loop: one flush after the tasks already queued, so frames submitted together (ATTACH, SHM_WRITTEN,
     * COMPLETE of a short session) leave in one syscall and reach the receiver in one read.
     */
    private void flushSoon() {
        if (!flushScheduled) {
            flushScheduled = true;
            channel.eventLoop().execute(() -> {
                flushScheduled = false;
                channel.flush();
            });
        }
    }

    /** Runs {@code task} on the event loop once the handshake is done, in submission order; dropped if closed. */
    private void submit(Runnable task) {
        if (closed) {
            return;
        }
        try {
            channel.eventLoop().execute(() -> {
                if (closed) {
                    return;
                }
                if (ready) {
                    task.run();
                } else {
                    untilReady.add(task);
                }
            });
        } catch (RejectedExecutionException e) {
            // event loop shut down: the agent is closing and aborts everything itself
        }
    }

    // ---- inbound ----------------------------------------------------------------------------------------------

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        ctx.writeAndFlush(host.hello().encode(ctx.alloc()), ctx.voidPromise());
        ticker = ctx.executor().schedule(() -> {
            if (!ready) {
                close(new AbortReason(AbortReason.Cause.PEER_UNREACHABLE, Side.SENDER, "no HELLO from " + key));
            }
        }, host.connectTimeout().toNanos(), TimeUnit.NANOSECONDS);
        ctx.fireChannelActive();
    }

    @Override
    protected void onBytesRead() {
        lastReadNanos = System.nanoTime();
    }

    @Override
    protected void onControlFrame(ChannelHandlerContext ctx, FrameType type, ByteBuf body) {
        host.frameReceived(type);
        if (type != FrameType.HELLO && !ready) {
            throw new ProtocolException(type + " before HELLO");
        }
        switch (type) {
            case HELLO -> onHello(ctx, Frames.Hello.decode(body));
            case HEARTBEAT -> {
            }
            case ATTACHED -> {
                DefaultSendSession s = sessions.get(body.readLong());
                if (s != null) {
                    s.onAttached();
                }
            }
            case WRITE_ACK -> {
                DefaultSendSession s = sessions.get(body.readLong());
                if (s != null) {
                    s.onWriteAck(body.readLong(), body.readLong());
                }
            }
            case COMPLETED -> {
                DefaultSendSession s = sessions.get(body.readLong());
                if (s != null) {
                    s.onCompleted();
                }
            }
            case ABORT -> {
                DefaultSendSession s = sessions.get(body.readLong());
                Frames.Abort frame = Frames.Abort.decode(body);
                AbortReason.Cause cause = AbortReason.Cause.ofWire(frame.cause());
                String detail = frame.detail();
                AbortReason.Cancel cancel = frame.cancelReason() == null || cause != AbortReason.Cause.REQUESTED
                        ? null : new AbortReason.Cancel(frame.cancelReason(), frame.cancelSource());
                if (s != null) {
                    s.onRemoteAbort(new AbortReason(cause, Side.RECEIVER, detail, cancel));
                }
            }
            case REGION_CLOSED -> host.regionRetired(peer.incarnation(), body.readLong());
            default -> throw new ProtocolException("unexpected " + type + " from a receiver");
        }
    }

    private void onHello(ChannelHandlerContext ctx, Frames.Hello hello) {
        if (ready) {
            throw new ProtocolException("second HELLO");
        }
        peer = hello;
        ready = true;
        ticker.cancel(false);
        long lease = host.lease().toNanos();
        long interval = Math.max(TimeUnit.MILLISECONDS.toNanos(5),
                Math.min(lease, TimeUnit.MILLISECONDS.toNanos(hello.leaseMillis())) / 4);
        ticker = ctx.executor().scheduleAtFixedRate(() -> tick(ctx, lease), interval, interval,
                TimeUnit.NANOSECONDS);
        log.debug("agent {}: connected to receiver {} at {}", host.agentName(), hello.agentName(), key);
        List<Runnable> queued = new ArrayList<>(untilReady);
        untilReady.clear();
        queued.forEach(Runnable::run);
    }

    private void tick(ChannelHandlerContext ctx, long leaseNanos) {
        if (closed) {
            return;
        }
        long silent = System.nanoTime() - lastReadNanos;
        if (silent > leaseNanos) {
            host.leaseExpired();
            log.warn("agent {}: receiver {} silent for {} ms, past its lease; aborting {} session(s)", host.agentName(),
                    peer.agentName(), TimeUnit.NANOSECONDS.toMillis(silent), sessions.size());
            close(new AbortReason(AbortReason.Cause.LEASE_EXPIRED, Side.SENDER,
                    "receiver " + peer.agentName() + " silent for " + TimeUnit.NANOSECONDS.toMillis(silent) + " ms"));
        } else {
            ctx.writeAndFlush(Frames.heartbeat(ctx.alloc()), ctx.voidPromise());
        }
    }

    @Override
    protected DataSink onDataFrame(ChannelHandlerContext ctx, long sessionId, long writeId, long dstOffset,
                                   int length, boolean lastPiece) {
        throw new ProtocolException("DATA from a receiver");
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        close(new AbortReason(ready ? AbortReason.Cause.PEER_LOST : AbortReason.Cause.PEER_UNREACHABLE,
                Side.SENDER, "connection to " + key + " closed"));
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        boolean io = cause instanceof IOException;
        if (io) {
            log.debug("agent {}: connection to {} failed: {}", host.agentName(), key, cause.toString());
        } else {
            log.warn("agent {}: closing connection to {}", host.agentName(), key, cause);
        }
        close(new AbortReason(io ? AbortReason.Cause.PEER_LOST : AbortReason.Cause.PROTOCOL_ERROR, Side.SENDER,
                cause.toString()));
    }

    /** Aborts every session over this connection with {@code reason} and closes it. Idempotent. */
    public void close(AbortReason reason) {
        if (closed) {
            return;
        }
        closed = true;
        host.closed(this);
        if (ticker != null) {
            ticker.cancel(false);
        }
        channel.close();
        for (DefaultSendSession s : sessions.values()) {
            s.onConnectionLost(reason);
        }
        Frames.Hello h = peer;
        if (h != null) {
            host.receiverGone(h.incarnation());
        }
    }
}
