package dev.ripcord.decode.http;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import dev.ripcord.decode.DecodeApplication;
import org.springframework.boot.test.context.SpringBootTest;

/**
 * A real decode worker (tiny engine) on a random port, in-band cancels only, no Kafka: one Spring context that every
 * test of this package annotated with it shares (the same configuration is the same cached context).
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@SpringBootTest(classes = DecodeApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "ripcord.engine.preset=tiny",
                "ripcord.cancel.propagation=in-band",
                "spring.cloud.stream.function.autodetect=false",
                "ripcord.internal.token=" + DecodeWorkerTest.INTERNAL_TOKEN,
                "logging.level.dev.ripcord=DEBUG",
        })
@interface DecodeWorkerTest {

    /** The internal token the worker expects. */
    String INTERNAL_TOKEN = "test-internal-token";
}
