package dev.ripcord.decode;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.decode.scheduler.DecodeScheduler;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.worker.SchedulerJournal;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Wires the decode scheduler onto the worker's engine, transfer agent and cancellation registry. */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(DecodeProperties.class)
public class DecodeConfiguration {

    /** Closed before the engine, agent and region it uses (it depends on them): its jobs stop first. */
    @Bean(destroyMethod = "close")
    DecodeScheduler decodeScheduler(InferenceEngine engine, TransferAgent agent, KvRegion kvPoolRegion,
                                    CancellationRegistry registry, DecodeProperties properties,
                                    MeterRegistry meters, SchedulerJournal journal) {
        return new DecodeScheduler(engine, agent, kvPoolRegion, registry, properties, meters, journal);
    }
}
