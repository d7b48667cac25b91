package dev.ripcord.prefill;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

/** Entry point of the prefill service. */
@SpringBootApplication
@EnableConfigurationProperties(PrefillProperties.class)
public class PrefillApplication {
    public static void main(String[] args) {
        SpringApplication.run(PrefillApplication.class, args);
    }
}
