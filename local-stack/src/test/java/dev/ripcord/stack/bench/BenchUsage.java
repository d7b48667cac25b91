package dev.ripcord.stack.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * A bench's usage text, from {@code <MainClass>.usage.txt} next to its main class: the one copy, which the
 * {@code ripcord} script prints for {@code ./ripcord bench NAME --help} and checks {@code --options} against before
 * anything is built.
 */
public final class BenchUsage {

    private BenchUsage() {
    }

    public static String read(Class<?> bench) {
        String name = bench.getSimpleName() + ".usage.txt";
        try (InputStream in = bench.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException(name + " is missing next to " + bench.getName());
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).stripTrailing();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
