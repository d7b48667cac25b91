package dev.ripcord.decode;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/** Entry point of the decode service. */
@SpringBootApplication
public class DecodeApplication {
    public static void main(String[] args) {
        SpringApplication.run(DecodeApplication.class, args);
    }
}
