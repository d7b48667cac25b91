package dev.ripcord.worker;

import java.time.Duration;

import dev.ripcord.kv.Backend;
import jakarta.validation.constraints.Positive;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.kv.*}: the worker's KV transfer agent.
 *
 * @param bindHost       interface the agent listens on ({@code 0.0.0.0} across hosts)
 * @param port           port it listens on; 0 picks a free one (descriptors carry the real one)
 * @param advertisedHost host put in transfer descriptors; default: the bind host
 * @param backend        {@code auto} (shared memory on one host, else TCP), {@code tcp} or {@code shm}
 * @param lease          how long a silent peer is tolerated before its sessions abort
 * @param attachTimeout  how long a receive session waits for its sender
 * @param maxConnections connections the agent's listener holds at once; one more is closed as it is accepted
 */
@Validated
@ConfigurationProperties("ripcord.kv")
public record TransferProperties(
        @DefaultValue("127.0.0.1") String bindHost,
        @DefaultValue("0") int port,
        @Nullable String advertisedHost,
        @DefaultValue("auto") Backend backend,
        @DefaultValue("5s") Duration lease,
        @DefaultValue("30s") Duration attachTimeout,
        @DefaultValue("256") @Positive int maxConnections) {
}
