package dev.ripcord.decode;

import dev.ripcord.decode.scheduler.DecodeScheduler;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.job.WorkerScheduler;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Continuous batching on the worker's {@link WorkerContext}; closed before it (its jobs stop first). */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(DecodeProperties.class)
public class DecodeConfiguration {

    @Bean(destroyMethod = "close")
    DecodeScheduler decodeScheduler(WorkerContext context, DecodeProperties properties) {
        return new DecodeScheduler(context, properties, WorkerScheduler.LoopMode.THREAD);
    }
}
