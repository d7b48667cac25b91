package dev.ripcord.gateway.auth;

import java.io.IOException;

import dev.ripcord.gateway.GatewayApplication;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ComponentScan;
import org.springframework.context.annotation.FilterType;
import org.springframework.context.annotation.Primary;
import org.springframework.core.type.classreading.MetadataReader;
import org.springframework.core.type.classreading.MetadataReaderFactory;
import org.springframework.core.type.filter.TypeFilter;

/**
 * The gateway application as it ships (every main configuration, Boot's auto-configuration), minus configurations
 * of other test classes on the test class path, with the serving core replaced by a {@link ScriptedGenerator}.
 */
@SpringBootConfiguration
@EnableAutoConfiguration
@ComponentScan(basePackageClasses = GatewayApplication.class,
        excludeFilters = @ComponentScan.Filter(type = FilterType.CUSTOM, classes = GatewayUnderTest.MainClassesOnly.class))
public class GatewayUnderTest {

    @Bean
    @Primary
    ScriptedGenerator scriptedGenerator(RequestContexts contexts) {
        return new ScriptedGenerator(contexts);
    }

    /**
     * Excludes whatever was compiled from src/test (other tests' contexts are not part of the gateway), and the
     * application class, whose own component scan has no such filter.
     */
    static final class MainClassesOnly implements TypeFilter {
        @Override
        public boolean match(MetadataReader reader, MetadataReaderFactory factory) throws IOException {
            return reader.getResource().getURL().toString().contains("/test-classes/")
                    || reader.getClassMetadata().getClassName().equals(GatewayApplication.class.getName());
        }
    }
}
