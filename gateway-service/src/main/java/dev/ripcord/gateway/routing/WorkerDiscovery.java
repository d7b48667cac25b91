package dev.ripcord.gateway.routing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.Inet6Address;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps a {@link WorkerPool}'s members up to date from the configured worker entries, re-resolved every interval.
 *
 * <p>An entry is one of:
 * <ul>
 *   <li>{@code http://host:port}, {@code https://host:port}: one worker, as written (a static list);</li>
 *   <li>{@code dns+http://name:port} (or {@code dns+https}): every A/AAAA record of {@code name}, one worker per
 *       address, e.g. a Kubernetes headless Service, whose DNS name lists the ready pods;</li>
 *   <li>{@code file:/path}: the workers listed in a file, one entry of the two kinds above per line ({@code #}
 *       starts a comment); the local stack's launcher rewrites it as it adds and removes workers.</li>
 * </ul>
 *
 * <p>A lookup or read that fails keeps that entry's last result (a DNS hiccup does not empty the pool; a dead pod
 * that stays listed is the circuit breaker's business). A name that never resolved yields nothing, and the pool
 * answers "no worker" until it does. Resolving blocks, so it runs on this class's own daemon thread, never on an
 * event loop; a configuration with only static entries starts no thread.
 */
public final class WorkerDiscovery implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(WorkerDiscovery.class);

    /** Looks up every address of a host name; tests pass a fake. */
    @FunctionalInterface
    public interface HostResolver {
        List<InetAddress> lookup(String host) throws UnknownHostException;

        static HostResolver system() {
            return host -> Arrays.asList(InetAddress.getAllByName(host));
        }
    }

    private final WorkerPool pool;
    private final List<URI> entries;
    private final HostResolver resolver;
    private final Map<URI, List<URI>> lastKnown = new ConcurrentHashMap<>();
    private final ScheduledExecutorService refresher;

    /**
     * Resolves {@code entries} into {@code pool} once now, then every {@code interval} when an entry is dynamic.
     */
    public WorkerDiscovery(WorkerPool pool, List<URI> entries, HostResolver resolver, Duration interval) {
        this.pool = pool;
        this.entries = List.copyOf(entries);
        this.resolver = resolver;
        refresh();
        if (this.entries.stream().anyMatch(WorkerDiscovery::dynamic) && !interval.isZero()) {
            refresher = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "ripcord-discovery-" + pool.role());
                t.setDaemon(true);
                return t;
            });
            long millis = Math.max(1, interval.toMillis());
            refresher.scheduleWithFixedDelay(this::refreshQuietly, millis, millis, TimeUnit.MILLISECONDS);
        } else {
            refresher = null;
        }
    }

    /** Whether {@code entry} is resolved again on every refresh (DNS or a file), rather than used as written. */
    public static boolean dynamic(URI entry) {
        String scheme = entry.getScheme() == null ? "" : entry.getScheme();
        return scheme.startsWith("dns+") || scheme.equals("file");
    }

    /** Resolves every entry now and applies the result to the pool; returns what changed. */
    public WorkerPool.Membership refresh() {
        LinkedHashSet<URI> workers = new LinkedHashSet<>();
        for (URI entry : entries) {
            workers.addAll(resolve(entry, 0));
        }
        WorkerPool.Membership change = pool.update(workers);
        if (change.changed()) {
            log.info("{} workers: {} now; added {}, removed {}", pool.role(), pool.instances().size(), change.added(),
                    change.removed());
        }
        return change;
    }

    private void refreshQuietly() {
        try {
            refresh();
        } catch (RuntimeException e) {
            log.warn("{} worker discovery failed; the pool is unchanged: {}", pool.role(), e.toString());
        }
    }

    private List<URI> resolve(URI entry, int depth) {
        String scheme = entry.getScheme() == null ? "" : entry.getScheme();
        try {
            List<URI> result;
            if (scheme.startsWith("dns+")) {
                String target = scheme.substring("dns+".length());
                result = new ArrayList<>();
                for (InetAddress address : resolver.lookup(entry.getHost())) {
                    String host = address instanceof Inet6Address ? "[" + address.getHostAddress() + "]"
                            : address.getHostAddress();
                    result.add(new URI(target, entry.getUserInfo(), host, entry.getPort(), entry.getPath(), null,
                            null));
                }
                result.sort(null); // a stable order whatever the DNS server's rotation
            } else if (scheme.equals("file")) {
                if (depth > 0) {
                    throw new IllegalArgumentException("a worker file may not name another file: " + entry);
                }
                result = new ArrayList<>();
                for (String line : Files.readAllLines(Path.of(entry))) {
                    String text = line.strip();
                    if (!text.isEmpty() && !text.startsWith("#")) {
                        result.addAll(resolve(URI.create(text), depth + 1));
                    }
                }
            } else {
                return List.of(entry);
            }
            lastKnown.put(entry, List.copyOf(result));
            return result;
        } catch (IOException | java.net.URISyntaxException e) {
            List<URI> previous = lastKnown.getOrDefault(entry, List.of());
            log.warn("{} workers: cannot resolve {} ({}); keeping its last {} address(es)", pool.role(), entry,
                    e.toString(), previous.size());
            return previous;
        }
    }

    /** Stops re-resolving; the pool keeps its members. */
    @Override
    public void close() {
        if (refresher != null) {
            refresher.shutdownNow();
        }
    }
}
