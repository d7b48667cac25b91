package dev.ripcord.worker;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;

/** The drain runs once, for the worker's own context, however many child contexts (the actuator's) close first. */
class GracefulDrainTest {

    static final AtomicInteger DRAINS = new AtomicInteger();

    @Configuration(proxyBeanMethods = false)
    static class Worker {
        @Bean
        Drainable drainable() {
            return grace -> DRAINS.incrementAndGet();
        }

        @Bean
        GracefulDrain gracefulDrain(ObjectProvider<Drainable> drainables) {
            return new GracefulDrain(drainables, Duration.ofSeconds(1), () -> "livePages=0");
        }
    }

    @Test
    void aChildContextClosingDoesNotDrainAndTheOwnContextDrainsOnce() {
        DRAINS.set(0);
        AnnotationConfigApplicationContext worker = new AnnotationConfigApplicationContext(Worker.class);
        AnnotationConfigApplicationContext management = new AnnotationConfigApplicationContext();
        management.setParent(worker);
        management.refresh();

        management.close();
        assertThat(DRAINS).as("the management context's close").hasValue(0);

        worker.close();
        assertThat(DRAINS).as("the worker context's close").hasValue(1);
    }
}
