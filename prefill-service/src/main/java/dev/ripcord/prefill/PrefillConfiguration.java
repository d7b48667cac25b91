package dev.ripcord.prefill;

import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.prefill.scheduler.PrefillScheduler;
import dev.ripcord.worker.SchedulerJournal;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Wires the prefill scheduler onto the worker's engine, transfer agent and cancellation registry. */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(PrefillProperties.class)
public class PrefillConfiguration {

    /** Closed before the engine, agent and region it uses (it depends on them): its jobs stop first. */
    @Bean(destroyMethod = "close")
    PrefillScheduler prefillScheduler(InferenceEngine engine, TransferAgent agent, KvRegion kvPoolRegion,
                                      CancellationRegistry registry, PrefillProperties properties,
                                      MeterRegistry meters, SchedulerJournal journal) {
        return new PrefillScheduler(engine, agent, kvPoolRegion, registry, properties, meters, journal);
    }
}
