package dev.ripcord.worker;

import java.util.concurrent.atomic.AtomicBoolean;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.context.ApplicationEventPublisher;

/**
 * Whether this worker is draining: once on, it stays on for the life of the process. Turned on by the drain
 * endpoint ({@value dev.ripcord.protocol.InternalApi#DRAIN}, what a Kubernetes {@code preStop} hook calls) or by
 * the shutdown itself ({@link GracefulDrain}), whichever comes first. Turning it on drops readiness at once (the
 * pod leaves its headless Service's DNS answer), and from then on the worker's HTTP edge answers every new job
 * {@code 503} with the code {@value dev.ripcord.protocol.Failed#DRAINING} before the job reaches its scheduler, so a
 * refused job provably left nothing behind (no registration, no pages, no transfer session) and the gateway may
 * send it elsewhere. Jobs already admitted are not touched: they finish, or the shutdown's grace period ends them.
 */
public final class DrainSwitch {

    private static final Logger log = LoggerFactory.getLogger(DrainSwitch.class);

    private final ApplicationEventPublisher publisher;
    private final AtomicBoolean draining = new AtomicBoolean();

    /** @param publisher where the readiness change is published (the worker's application context) */
    public DrainSwitch(ApplicationEventPublisher publisher) {
        this.publisher = publisher;
    }

    /** A switch that publishes nothing, for tests of the HTTP edge alone. */
    public static DrainSwitch detached() {
        return new DrainSwitch(event -> { });
    }

    public boolean draining() {
        return draining.get();
    }

    /** Turns draining on; returns whether this call did (false: it was on already). */
    public boolean begin(String why) {
        if (!draining.compareAndSet(false, true)) {
            return false;
        }
        AvailabilityChangeEvent.publish(publisher, this, ReadinessState.REFUSING_TRAFFIC);
        log.info("draining ({}): readiness down, new jobs refused with 503 draining", why);
        return true;
    }
}
