package dev.ripcord.cancel.kafka;

import dev.ripcord.cancel.Sabotage;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;

/**
 * Arms the bench-only {@link Sabotage} a service was started with ({@value Sabotage#PROPERTY}, from any property
 * source: a system property, an argument), or refuses to let the service start when the property is set without the
 * fault bench's marker ({@value Sabotage#BENCH_MARKER}{@code =1} in the environment). Runs in every service, before
 * anything else is built.
 */
public final class SabotageSwitch implements EnvironmentPostProcessor {

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        Sabotage.arm(environment.getProperty(Sabotage.PROPERTY), System.getenv(Sabotage.BENCH_MARKER));
    }
}
