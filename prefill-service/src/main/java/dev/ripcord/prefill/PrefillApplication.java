package dev.ripcord.prefill;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** Entry point of the prefill service. */
@SpringBootApplication
public class PrefillApplication {
    public static void main(String[] args) {
        SpringApplication.run(PrefillApplication.class, args);
    }
}
