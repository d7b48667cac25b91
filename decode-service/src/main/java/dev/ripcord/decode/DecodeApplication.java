package dev.ripcord.decode;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

/** Entry point of the decode service. */
@SpringBootApplication
@EnableConfigurationProperties(DecodeProperties.class)
public class DecodeApplication {
    public static void main(String[] args) {
        SpringApplication.run(DecodeApplication.class, args);
    }
}
