package dev.ripcord.prefill;

import dev.ripcord.prefill.scheduler.PrefillScheduler;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.job.WorkerScheduler;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The prefill scheduler on the worker's {@link WorkerContext}; closed before it (its jobs stop first). */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(PrefillProperties.class)
public class PrefillConfiguration {

    @Bean(destroyMethod = "close")
    PrefillScheduler prefillScheduler(WorkerContext context, PrefillProperties properties) {
        return new PrefillScheduler(context, properties, WorkerScheduler.LoopMode.THREAD);
    }
}
