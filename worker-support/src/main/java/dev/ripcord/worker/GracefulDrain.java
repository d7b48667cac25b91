package dev.ripcord.worker;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.event.ContextClosedEvent;

/**
 * Graceful shutdown of a worker, in order: readiness goes down (load balancers and the gateway stop sending),
 * every {@link Drainable} stops admitting and drains (finish within the grace period, then abort), and only then
 * does Spring stop the web server and destroy the engine, the transfer agent and their off-heap memory.
 *
 * <p>{@link ContextClosedEvent} is published before the web server's graceful shutdown and before any bean is
 * destroyed, which is what makes this order hold. A child context (the actuator's, when management runs on its own
 * port) also publishes a {@link ContextClosedEvent} that reaches this listener; only the worker's own context's
 * close drains, and it drains once.
 *
 * <p>The last line a drain writes says what the worker still holds once its requests are gone ({@code livePages},
 * {@code liveSessions}, {@code liveRegistrations}, {@code liveRegions}): all zero but the one region of the page
 * pool, which Spring closes next. That line is how a shutdown is checked after the process is gone
 * (docs/operations.md, local-stack {@code GracefulShutdownIT}).
 */
final class GracefulDrain implements ApplicationListener<ContextClosedEvent>, ApplicationContextAware {

    private static final Logger log = LoggerFactory.getLogger(GracefulDrain.class);

    private final ObjectProvider<Drainable> drainables;
    private final Duration grace;
    private final Supplier<String> holdings;
    private final AtomicBoolean drained = new AtomicBoolean();
    private final DrainSwitch drainSwitch;
    private ApplicationContext owner;

    /**
     * @param holdings what the worker still holds, as {@code key=value} pairs, for the drain's last log line
     */
    GracefulDrain(ObjectProvider<Drainable> drainables, Duration grace, Supplier<String> holdings) {
        this(drainables, grace, holdings, null);
    }

    /**
     * @param drainSwitch the worker's switch, turned on first (the HTTP edge then refuses new jobs with 503
     *                    draining); null: readiness is published directly
     */
    GracefulDrain(ObjectProvider<Drainable> drainables, Duration grace, Supplier<String> holdings,
                  DrainSwitch drainSwitch) {
        this.drainables = drainables;
        this.grace = grace;
        this.holdings = holdings;
        this.drainSwitch = drainSwitch;
    }

    @Override
    public void setApplicationContext(ApplicationContext context) {
        this.owner = context;
    }

    @Override
    public void onApplicationEvent(ContextClosedEvent event) {
        ApplicationContext context = event.getApplicationContext();
        if (context != owner || !drained.compareAndSet(false, true)) {
            return;
        }
        if (drainSwitch != null) {
            drainSwitch.begin("shutdown");
        } else {
            AvailabilityChangeEvent.publish(context, ReadinessState.REFUSING_TRAFFIC);
        }
        log.info("draining, grace period {}", grace);
        drainables.orderedStream().forEach(d -> d.drain(grace));
        log.info("drained; closing engine and transfer agent ({})", holdings.get());
    }
}
