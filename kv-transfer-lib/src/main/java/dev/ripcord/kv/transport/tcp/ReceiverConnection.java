package dev.ripcord.kv.transport.tcp;

import dev.ripcord.kv.AbortReason;
import dev.ripcord.kv.Side;
import dev.ripcord.kv.session.DefaultReceiveSession;
import dev.ripcord.kv.session.ReceiveLink;
import dev.ripcord.kv.shm.PeerProcess;
import dev.ripcord.kv.wire.FrameDecoder;
import dev.ripcord.kv.wire.FrameType;
import dev.ripcord.kv.wire.Frames;
import dev.ripcord.kv.wire.ProtocolException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receiving agent's end of one connection from a sending agent: binds sessions, lands DATA payloads in their
 * regions, answers with acknowledgements and verdicts, and watches the sender's lease. A dead or silent connection
 * aborts every session bound to it. All methods run on the channel's event loop except the {@code write*}
 * helpers, which may be called from any thread.
 */
public final class ReceiverConnection extends FrameDecoder implements ReceiveLink {
    private static final Logger log = LoggerFactory.getLogger(ReceiverConnection.class);

    private final ConnectionHost host;
    private final Map<Long, DefaultReceiveSession> bound = new ConcurrentHashMap<>();
    private volatile Channel channel;
    private volatile boolean closed;
    private volatile Frames.Hello peer;
    private long lastReadNanos = System.nanoTime();
    private ScheduledFuture<?> ticker;
    private boolean reading; // event loop: inside a read, replies are flushed once at channelReadComplete
    private boolean flushPending;

    public ReceiverConnection(ConnectionHost host) {
        this.host = host;
    }

    @Override
    public String peerName() {
        Frames.Hello h = peer;
        return h == null ? "?" : h.agentName();
    }

    @Override
    public PeerProcess peerProcess() {
        Frames.Hello h = peer;
        return h == null ? null : new PeerProcess(h.pid(), h.pidStartMillis());
    }

    @Override
    public void bind(DefaultReceiveSession s) {
        bound.put(s.sessionId(), s);
    }

    @Override
    public void unbind(DefaultReceiveSession s) {
        bound.remove(s.sessionId(), s);
    }

    int boundSessions() {
        return bound.size();
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        channel = ctx.channel();
        host.opened(this);
        long handshake = host.connectTimeout().toNanos();
        ticker = ctx.executor().schedule(() -> {
            if (peer == null) {
                close(new AbortReason(AbortReason.Cause.PEER_UNREACHABLE, Side.RECEIVER, "no HELLO"));
            }
        }, handshake, TimeUnit.NANOSECONDS);
        ctx.fireChannelActive();
    }

    @Override
    protected void onBytesRead() {
        lastReadNanos = System.nanoTime();
        reading = true;
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        reading = false;
        if (flushPending) {
            flushPending = false;
            ctx.flush(); // every ack, ATTACHED and verdict of this read in one syscall and one packet
        }
        ctx.fireChannelReadComplete();
    }

    @Override
    protected void onControlFrame(ChannelHandlerContext ctx, FrameType type, ByteBuf body) {
        host.frameReceived(type);
        if (type != FrameType.HELLO && peer == null) {
            throw new ProtocolException(type + " before HELLO");
        }
        switch (type) {
            case HELLO -> onHello(ctx, Frames.Hello.decode(body));
            case HEARTBEAT -> {
            }
            case ATTACH -> onAttach(body.readLong(), body.readLong(), body.readLong(), body.readByte() != 0);
            case SHM_WRITTEN -> {
                DefaultReceiveSession s = bound.get(body.readLong());
                if (s != null) {
                    s.onSharedMemoryWritten(this, body.readLong(), body.readLong(), body.readLong());
                }
            }
            case COMPLETE -> {
                DefaultReceiveSession s = bound.get(body.readLong());
                long total = body.readLong();
                byte[] meta = Frames.readBytes(body, Frames.MAX_METADATA);
                if (s != null) {
                    s.onComplete(this, total, meta);
                }
            }
            case ABORT -> {
                DefaultReceiveSession s = bound.get(body.readLong());
                Frames.Abort frame = Frames.Abort.decode(body);
                AbortReason.Cause cause = AbortReason.Cause.ofWire(frame.cause());
                String detail = frame.detail();
                AbortReason.Cancel cancel = frame.cancelReason() == null || cause != AbortReason.Cause.REQUESTED
                        ? null : new AbortReason.Cancel(frame.cancelReason(), frame.cancelSource());
                if (s != null) {
                    s.onRemoteAbort(this, new AbortReason(cause, Side.SENDER, detail, cancel));
                }
            }
            case ABORT_ACK -> {
                DefaultReceiveSession s = bound.get(body.readLong());
                if (s != null) {
                    s.maybeRelease();
                }
            }
            default -> throw new ProtocolException("unexpected " + type + " from a sender");
        }
    }

    private void onHello(ChannelHandlerContext ctx, Frames.Hello hello) {
        if (peer != null) {
            throw new ProtocolException("second HELLO");
        }
        peer = hello;
        ctx.writeAndFlush(host.hello().encode(ctx.alloc()));
        ticker.cancel(false);
        long lease = host.lease().toNanos();
        long interval = Math.max(TimeUnit.MILLISECONDS.toNanos(5),
                Math.min(lease, TimeUnit.MILLISECONDS.toNanos(hello.leaseMillis())) / 4);
        ticker = ctx.executor().scheduleAtFixedRate(() -> tick(ctx, lease), interval, interval,
                TimeUnit.NANOSECONDS);
        log.debug("agent {}: sender {} connected from {}", host.agentName(), hello.agentName(), ctx.channel()
                .remoteAddress());
    }

    private void tick(ChannelHandlerContext ctx, long leaseNanos) {
        if (closed) {
            return;
        }
        long silent = System.nanoTime() - lastReadNanos;
        if (silent > leaseNanos) {
            host.leaseExpired();
            log.warn("agent {}: sender {} silent for {} ms, past its lease; aborting its {} session(s)",
                    host.agentName(), peerName(), TimeUnit.NANOSECONDS.toMillis(silent), bound.size());
            close(new AbortReason(AbortReason.Cause.LEASE_EXPIRED, Side.RECEIVER,
                    "sender " + peerName() + " silent for " + TimeUnit.NANOSECONDS.toMillis(silent) + " ms"));
        } else {
            ctx.writeAndFlush(Frames.heartbeat(ctx.alloc()), ctx.voidPromise());
        }
    }

    private void onAttach(long sessionId, long token, long epoch, boolean sharedMemory) {
        DefaultReceiveSession s = host.receiveSession(sessionId);
        AbortReason refusal;
        if (s != null && s.descriptor().attachToken() != token) {
            log.warn("request={} session={}: sender {} presented a wrong attach token; refused", s.requestId(),
                    sessionId, peerName());
            s = null; // answer exactly as for an unknown session
        }
        if (s == null) {
            AbortReason cancelled = host.releasedForCancel(sessionId, token); // a cancel released it before ATTACH
            refusal = cancelled != null ? cancelled : new AbortReason(AbortReason.Cause.UNKNOWN_SESSION,
                    Side.RECEIVER, "no live session " + sessionId + " (released, or the descriptor is stale)");
        } else if (sharedMemory && s.descriptor().epoch() != epoch) {
            refusal = new AbortReason(AbortReason.Cause.UNKNOWN_SESSION, Side.RECEIVER, "stale epoch " + epoch);
        } else {
            refusal = s.attach(this, sharedMemory);
        }
        if (refusal == null) {
            write(a -> Frames.attached(a, sessionId));
        } else {
            writeAbort(sessionId, refusal);
        }
    }

    @Override
    protected DataSink onDataFrame(ChannelHandlerContext ctx, long sessionId, long writeId, long dstOffset,
                                   int length, boolean lastPiece) {
        if (peer == null) {
            throw new ProtocolException("DATA before HELLO");
        }
        host.frameReceived(FrameType.DATA);
        DefaultReceiveSession s = bound.get(sessionId);
        return s == null ? null : s.landing(this, writeId, dstOffset, length, lastPiece);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        close(new AbortReason(AbortReason.Cause.PEER_LOST, Side.RECEIVER,
                "connection from sender " + peerName() + " closed"));
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        boolean io = cause instanceof IOException;
        if (io) {
            log.debug("agent {}: connection from {} failed: {}", host.agentName(), peerName(), cause.toString());
        } else {
            log.warn("agent {}: closing connection from {}", host.agentName(), peerName(), cause);
        }
        close(new AbortReason(io ? AbortReason.Cause.PEER_LOST : AbortReason.Cause.PROTOCOL_ERROR, Side.RECEIVER,
                cause.toString()));
    }

    /** Aborts every bound session with {@code reason} and closes the channel. Idempotent. */
    public void close(AbortReason reason) {
        if (closed) {
            return;
        }
        closed = true;
        Channel ch = channel;
        if (ticker != null) {
            ticker.cancel(false);
        }
        if (ch != null) {
            ch.close();
        }
        for (DefaultReceiveSession s : bound.values()) {
            s.onConnectionLost(this, reason);
        }
        host.closed(this);
    }

    @Override
    public void writeAck(long sessionId, long writeId, long length) {
        write(a -> Frames.writeAck(a, sessionId, writeId, length));
    }

    @Override
    public void writeCompleted(long sessionId) {
        write(a -> Frames.completed(a, sessionId));
    }

    @Override
    public void writeAbort(long sessionId, AbortReason reason) {
        write(a -> Frames.abort(a, sessionId, reason.cause().ordinal(), reason.detail(),
                reason.cancel() == null ? null : reason.cancel().reason(),
                reason.cancel() == null ? null : reason.cancel().source()));
    }

    public void writeRegionClosed(long regionId) {
        write(a -> Frames.regionClosed(a, regionId));
    }

    private void write(Function<io.netty.buffer.ByteBufAllocator, ByteBuf> frame) {
        Channel ch = channel;
        if (ch == null || closed) {
            return;
        }
        if (ch.eventLoop().inEventLoop()) {
            if (reading) {
                ch.write(frame.apply(ch.alloc()), ch.voidPromise());
                flushPending = true;
            } else {
                ch.writeAndFlush(frame.apply(ch.alloc()), ch.voidPromise());
            }
        } else {
            try {
                ch.eventLoop().execute(() -> ch.writeAndFlush(frame.apply(ch.alloc()), ch.voidPromise()));
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // event loop shutting down: the peer learns from the closed connection
            }
        }
    }
}
