package dev.ripcord.kv.transport.tcp;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class ConnectionPoolTest {

    static final class Conn implements ConnectionPool.Pooled {
        final String key;
        volatile boolean closed;

        Conn(String key) {
            this.key = key;
        }

        @Override
        public boolean isClosed() {
            return closed;
        }
    }

    final List<Conn> opened = new CopyOnWriteArrayList<>();
    final ConnectionPool<Conn> pool = new ConnectionPool<>((key, host, port) -> {
        Conn c = new Conn(key);
        opened.add(c);
        return c;
    });

    @Test
    void sessionsToOneReceiverShareItsConnection() {
        Conn a = pool.connectionTo("10.0.0.1", 7000);
        Conn b = pool.connectionTo("10.0.0.1", 7000);
        assertThat(b).isSameAs(a);
        assertThat(a.key).isEqualTo("10.0.0.1:7000");
        assertThat(opened).hasSize(1);
        assertThat(pool.size()).isEqualTo(1);
    }

    @Test
    void eachReceiverAddressGetsItsOwnConnection() {
        Conn a = pool.connectionTo("10.0.0.1", 7000);
        Conn b = pool.connectionTo("10.0.0.1", 7001);
        Conn c = pool.connectionTo("10.0.0.2", 7000);
        assertThat(Set.of(a, b, c)).hasSize(3);
        assertThat(pool.all()).containsExactlyInAnyOrder(a, b, c);
    }

    @Test
    void aClosedConnectionIsReplacedByAFreshOne() {
        Conn first = pool.connectionTo("h", 1);
        first.closed = true;
        Conn second = pool.connectionTo("h", 1);
        assertThat(second).isNotSameAs(first);
        assertThat(second.isClosed()).isFalse();
        assertThat(pool.size()).isEqualTo(1);
    }

    @Test
    void aLateRemovalOfAClosedConnectionNeverDropsItsSuccessor() {
        Conn first = pool.connectionTo("h", 1);
        first.closed = true;
        Conn second = pool.connectionTo("h", 1);
        pool.remove(first.key, first); // the first connection's close runs after its replacement was made
        assertThat(pool.connectionTo("h", 1)).isSameAs(second);
        pool.remove(second.key, second);
        assertThat(pool.size()).isZero();
    }

    @Test
    void manyThreadsAskingAtOnceOpenOneConnection() throws Exception {
        for (int round = 0; round < 200; round++) {
            ConnectionPool<Conn> fresh = new ConnectionPool<>((key, host, port) -> {
                Conn c = new Conn(key);
                opened.add(c);
                return c;
            });
            opened.clear();
            Set<Conn> seen = ConcurrentHashMap.newKeySet();
            CountDownLatch start = new CountDownLatch(1);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        start.await();
                    } catch (InterruptedException e) {
                        return;
                    }
                    seen.add(fresh.connectionTo("h", 9));
                }));
            }
            start.countDown();
            for (Thread t : threads) {
                t.join();
            }
            assertThat(opened).hasSize(1);
            assertThat(seen).hasSize(1);
        }
    }
}
