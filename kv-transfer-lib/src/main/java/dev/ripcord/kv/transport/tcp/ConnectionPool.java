package dev.ripcord.kv.transport.tcp;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The sending agent's connections, one per receiving agent address ({@code host:port}), shared by every session
 * to that receiver. A lookup reuses the open connection; one that has closed is replaced by a fresh one, made at
 * most once however many threads ask at the same time. A connection that closes removes itself, and only itself
 * (a late removal never drops its successor). Thread-safe; opening never blocks (connections connect in the
 * background).
 */
public final class ConnectionPool<C extends ConnectionPool.Pooled> {

    /** A pooled connection. */
    public interface Pooled {
        boolean isClosed();
    }

    /** Opens a connection to {@code host:port}, pooled under {@code key}. */
    @FunctionalInterface
    public interface Opener<C> {
        C open(String key, String host, int port);
    }

    private final Opener<C> opener;
    private final Map<String, C> connections = new ConcurrentHashMap<>();
    private final Object openLock = new Object();

    public ConnectionPool(Opener<C> opener) {
        this.opener = opener;
    }

    static String key(String host, int port) {
        return host + ":" + port;
    }

    /** The open connection to {@code host:port}, opened now if there is none (or the last one closed). */
    public C connectionTo(String host, int port) {
        String key = key(host, port);
        C c = connections.get(key);
        if (c != null && !c.isClosed()) {
            return c;
        }
        synchronized (openLock) {
            c = connections.get(key);
            if (c == null || c.isClosed()) {
                c = opener.open(key, host, port);
                connections.put(key, c);
            }
            return c;
        }
    }

    /** {@code c} closed: forget it, unless the pool already holds a newer connection under {@code key}. */
    public void remove(String key, C c) {
        connections.remove(key, c);
    }

    public int size() {
        return connections.size();
    }

    /** The pooled connections now (a copy). */
    public Collection<C> all() {
        return List.copyOf(connections.values());
    }
}
