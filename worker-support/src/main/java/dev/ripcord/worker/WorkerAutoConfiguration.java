package dev.ripcord.worker;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Locale;

import dev.ripcord.protocol.Pairing;
import dev.ripcord.cancel.CancellationRegistry;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.KvLayout;
import dev.ripcord.engine.KvPagePool;
import dev.ripcord.engine.Preset;
import dev.ripcord.engine.model.WeightCache;
import dev.ripcord.kv.KvRegion;
import dev.ripcord.kv.TransferAgent;
import dev.ripcord.kv.TransferAgentOptions;
import dev.ripcord.lifecycle.LifecyclePublisher;
import dev.ripcord.worker.http.WorkerEndpoint;
import dev.ripcord.worker.http.WorkerRoutes;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.ServerResponse;

/**
 * What every worker has: an inference engine, a KV transfer agent, and the engine's page pool living in a region the
 * agent allocated ({@link AgentPoolMemory}): a shared-memory file when the agent offers that backend, so that a
 * same-host peer copies a request's KV straight into the pages.
 *
 * <p>Ownership and shutdown order: the agent owns the pool memory and frees it exactly once, when the region is
 * released. Spring destroys beans in reverse dependency order: the schedulers first, then the engine (it depends on
 * the pool memory), then {@link AgentPoolMemory} closes the region (released once its transfers have drained), then
 * the agent closes, aborting and draining what is left before it frees the memory. So the memory outlives the
 * engine and every transfer, and a late write can never land in freed memory.
 */
@AutoConfiguration
@EnableConfigurationProperties({EngineProperties.class, TransferProperties.class})
public class WorkerAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(WorkerAutoConfiguration.class);

    @Bean(destroyMethod = "close")
    InferenceEngine inferenceEngine(EngineProperties p, AgentPoolMemory poolMemory) {
        // kv-pages, when given, overrides the budget.
        KvMemory budget = p.kvPages() > 0 ? null : KvMemory.parse(p.kvMemory());
        EngineOptions options = EngineOptions.defaults()
                .withKvPoolMemory(poolMemory)
                .withPageTokens(p.pageTokens())
                .withKvPages(p.kvPages())
                .withKvMemoryBytes(budget == null ? 0 : budget.bytes())
                .withMaxChunkTokens(p.maxChunkTokens())
                .withMaxBatch(p.maxBatch())
                .withKernels(p.kernels())
                .withNativeIsa(p.nativeIsa())
                .withQuantizedDot(p.quantizedDot())
                .withWeightCache(p.weightCache())
                .withPrefixCachePages(p.prefixCacheOrDefault().enginePages());
        if (p.threads() > 0) {
            options = options.withThreads(p.threads());
        }
        InferenceEngine engine;
        if (p.checkpoint() != null) {
            try {
                engine = InferenceEngine.load(p.checkpoint(), p.tokenizer(), options);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot load checkpoint " + p.checkpoint(), e);
            }
        } else {
            engine = InferenceEngine.create(Preset.byName(p.preset()), p.seed(), options);
        }
        log.info("engine ready: {}", engine.describe());
        if (p.weightCache() != null && engine.weightsOrigin() == WeightCache.Origin.PRIVATE) {
            log.warn("weights: {}", engine.weightsDescription());
        } else {
            log.info("weights: {}", engine.weightsDescription());
        }
        log.info(kvCapacity(engine, budget));
        return engine;
    }

    /** What the KV pool holds, in the units an operator sizes it by: pages, tokens, full contexts, bytes. */
    static String kvCapacity(InferenceEngine engine, @Nullable KvMemory budget) {
        int pages = engine.options().kvPages();
        int pageTokens = engine.options().pageTokens();
        long tokens = (long) pages * pageTokens;
        int context = engine.config().contextLength();
        long contextPages = (context + pageTokens - 1) / pageTokens;
        long bytes = pages * KvLayout.of(engine.config(), pageTokens).pageBytes();
        String from = budget == null ? "ripcord.engine.kv-pages"
                : "ripcord.engine.kv-memory=" + budget.text() + ", a budget of " + budget.bytes() + " bytes"
                        + (bytes > budget.bytes() ? ", raised to one full context" : "");
        return String.format(Locale.ROOT,
                "KV pool: %d pages of %d tokens = %d tokens, %d full contexts of %d tokens, %.1f MiB (from %s)",
                pages, pageTokens, tokens, pages / contextPages, context, bytes / 1048576.0, from);
    }

    /** Closes last of the three: after the engine, and after the pool region it owns the memory of. */
    @Bean(destroyMethod = "close")
    TransferAgent transferAgent(TransferProperties p, ObjectProvider<MeterRegistry> meters,
                                @Value("${spring.application.name:worker}") String service) {
        TransferAgentOptions options = TransferAgentOptions.defaults(service + "-" + ProcessHandle.current().pid())
                .withBindHost(p.bindHost())
                .withPort(p.port())
                .withBackend(p.backend())
                .withLease(p.lease())
                .withAttachTimeout(p.attachTimeout())
                .withMaxConnections(p.maxConnections())
                .withMeterRegistry(meters.getIfAvailable(SimpleMeterRegistry::new));
        if (p.advertisedHost() != null) {
            options = options.withAdvertisedHost(p.advertisedHost());
        }
        TransferAgent agent = TransferAgent.start(options);
        log.info("transfer agent {} listening on {}", agent.name(), agent.listenAddress());
        return agent;
    }

    /** The request ID of every internal call in the Reactor context, hence in the MDC of its log lines. */
    @Bean
    RequestIdWebFilter requestIdWebFilter() {
        return new RequestIdWebFilter();
    }

    /**
     * The KV cache's memory: {@code ripcord.kv.cache.live.bytes}, the bytes of pages held by requests (reserved,
     * being filled, decoding, or waiting for their transfer session to release), and
     * {@code ripcord.kv.cache.capacity.bytes}, the whole pool. In vLLM's terms, which the Gateway API Inference
     * Extension's endpoint picker reads: {@code ripcord.kv.cache.usage.perc}, the fraction (0 to 1) of the pool's
     * pages allocated (vLLM's {@code kv_cache_usage_perc}), and {@code ripcord.cache.config.info}, always 1, whose
     * labels give the page size in tokens ({@code block_size}) and the pool's page count ({@code num_gpu_blocks}:
     * vLLM's label name, which the picker's prefix-cache scorer reads; here the pages are in host memory).
     */
    @Bean
    MeterBinder kvCacheMetrics(InferenceEngine engine) {
        return registry -> {
            KvPagePool pool = engine.pagePool();
            Gauge.builder("ripcord.kv.cache.live.bytes", pool, KvPagePool::bytesLive).baseUnit("bytes")
                    .description("KV cache bytes held by requests").register(registry);
            Gauge.builder("ripcord.kv.cache.capacity.bytes", pool, p -> (double) p.pageCount() * p.pageBytes())
                    .baseUnit("bytes").description("KV cache bytes in the page pool").register(registry);
            Gauge.builder("ripcord.kv.cache.usage.perc", pool, WorkerAutoConfiguration::kvCacheUsage)
                    .description("fraction of the KV page pool allocated, 0 to 1").register(registry);
            Gauge.builder("ripcord.cache.config.info", () -> 1)
                    .tag("block_size", Integer.toString(pool.layout().pageTokens()))
                    .tag("num_gpu_blocks", Integer.toString(pool.pageCount()))
                    .description("the KV cache's configuration, in the labels").register(registry);
        };
    }

    /** Pages allocated / pages in the pool: 0 (empty) to 1 (full). */
    static double kvCacheUsage(KvPagePool pool) {
        int pages = pool.pageCount();
        return pages == 0 ? 0 : (double) pool.pagesLive() / pages;
    }

    /**
     * Every {@code ripcord.*} meter of this worker carries {@code model_name}, the served model's id as clients send
     * it, as vLLM's metrics do: one worker serves one model, so the label is the same on all of them, and a
     * dashboard filters on it as on vLLM's.
     */
    @Bean
    MeterFilter modelNameTag(EngineProperties engine) {
        return ModelNameTag.filter(engine.servedModelName());
    }

    /** The scheduler's journal of recent events, served at {@code /internal/v1/journal}. */
    @Bean
    SchedulerJournal schedulerJournal(@Value("${ripcord.worker.journal-size:10000}") int size) {
        return new SchedulerJournal(size);
    }

    /** Drains on shutdown; its last line reports the pages, sessions, registrations and regions still held. */
    @Bean
    GracefulDrain gracefulDrain(ObjectProvider<Drainable> drainables,
                                @Value("${ripcord.worker.drain-timeout:10s}") java.time.Duration grace,
                                InferenceEngine engine, TransferAgent agent,
                                ObjectProvider<CancellationRegistry> registries, DrainSwitch drainSwitch) {
        return new GracefulDrain(drainables, grace, () -> {
            CancellationRegistry registry = registries.getIfAvailable();
            return "livePages=" + engine.pagePool().pagesLive()
                    + " liveSessions=" + agent.stats().liveSessions()
                    + " liveRegistrations=" + (registry == null ? 0 : registry.liveRegistrations())
                    + " liveRegions=" + agent.stats().liveRegions();
        }, drainSwitch);
    }

    /** Whether the worker drains: the drain endpoint or the shutdown turns it on; the HTTP edge reads it. */
    @Bean
    DrainSwitch drainSwitch(org.springframework.context.ApplicationEventPublisher publisher) {
        return new DrainSwitch(publisher);
    }

    /** The worker's internal HTTP API around its one {@link dev.ripcord.worker.http.WorkerEndpoint}. */
    @Bean
    @ConditionalOnBean(WorkerEndpoint.class)
    RouterFunction<ServerResponse> workerRouter(WorkerEndpoint<?> endpoint, WorkerContext context,
                                                CancelProperties cancel, DrainSwitch drainSwitch,
                                                @Value("${ripcord.worker.closed-stream-grace:5s}")
                                                java.time.Duration closedStreamGrace) {
        return new WorkerRoutes(context, cancel, endpoint.retryAfter(), drainSwitch, closedStreamGrace,
                reactor.core.scheduler.Schedulers.parallel()).router(endpoint);
    }

    /** What both schedulers work with; they close before any of it (they depend on it). */
    @Bean
    WorkerContext workerContext(InferenceEngine engine, TransferAgent agent, KvRegion kvPoolRegion,
                                CancellationRegistry registry, MeterRegistry meters,
                                SchedulerJournal journal, ObjectProvider<LifecyclePublisher> lifecycle,
                                EngineProperties p) {
        LifecyclePublisher publisher = lifecycle.getIfAvailable(LifecyclePublisher::disabled);
        if (publisher.isEnabled()) {
            agent.onSession(new SessionLifecycle(publisher));
        }
        Pairing pairing = new Pairing(Pairing.modelIdentity(p.preset(), p.seed(), p.checkpoint(), p.tokenizer()),
                engine.numerics());
        log.info("pairing: model {} numerics {} (a peer worker must have both)", pairing.model(),
                pairing.numerics());
        return new WorkerContext(engine, agent, kvPoolRegion, registry, meters, journal, EngineLoop.Mode.THREAD,
                publisher, pairing);
    }

    /** Where the engine's page pool lives; closed after the engine, before the agent (see the class comment). */
    @Bean(destroyMethod = "close")
    AgentPoolMemory kvPoolMemory(TransferAgent agent) {
        return new AgentPoolMemory(agent);
    }

    /**
     * The engine's whole page pool as one transfer region: page {@code p} is at offset {@code p * pageBytes}. No
     * destroy method: {@link AgentPoolMemory} closes it, after the engine.
     */
    @Bean(destroyMethod = "")
    KvRegion kvPoolRegion(AgentPoolMemory poolMemory, InferenceEngine engine) {
        KvRegion region = poolMemory.region();
        log.info("KV page pool: {} bytes in {}", engine.pagePool().segment().byteSize(), region);
        return region;
    }
}
