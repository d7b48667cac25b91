package dev.ripcord.kv.transport.tcp;

import dev.ripcord.kv.session.KvMetrics;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Admits at most {@code max} connections to the agent's listener at once. It sits on the server channel, so it sees
 * each accepted connection on the one acceptor thread, in accept order, before the connection is registered or reads
 * a byte: one over the cap is closed there, counted ({@code ripcord.kv.connections.refused}) and logged at WARN (at
 * most once a second, with the running count). An admitted connection gives its place back when it closes.
 */
@ChannelHandler.Sharable
public final class ConnectionCap extends ChannelInboundHandlerAdapter {
    private static final Logger log = LoggerFactory.getLogger(ConnectionCap.class);
    private static final long LOG_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final String agent;
    private final int max;
    private final KvMetrics metrics;
    private final AtomicInteger open = new AtomicInteger();
    private long refused; // acceptor thread only
    private long lastLogNanos;

    public ConnectionCap(String agent, int max, KvMetrics metrics) {
        this.agent = agent;
        this.max = max;
        this.metrics = metrics;
    }

    /** Connections admitted and not closed yet. */
    public int open() {
        return open.get();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        Channel child = (Channel) msg;
        if (open.incrementAndGet() > max) {
            open.decrementAndGet();
            refused++;
            metrics.connectionRefused();
            long now = System.nanoTime();
            if (refused == 1 || now - lastLogNanos >= LOG_EVERY_NANOS) {
                lastLogNanos = now;
                log.warn("agent {}: refused a connection from {}: {} open, the most ripcord.kv.max-connections "
                        + "allows ({} refused so far)", agent, child.remoteAddress(), max, refused);
            }
            child.unsafe().closeForcibly(); // not registered yet: as Netty's acceptor closes a child it cannot use
            return;
        }
        child.closeFuture().addListener(f -> open.decrementAndGet());
        ctx.fireChannelRead(msg);
    }
}
