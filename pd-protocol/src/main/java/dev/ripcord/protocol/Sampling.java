package dev.ripcord.protocol;

/**
 * How to pick tokens. {@code temperature == 0} is greedy. The seed makes sampling reproducible; prefill samples
 * the first token and decode the rest, so both must derive their randomness from the same seed.
 */
public record Sampling(double temperature, double topP, long seed) {

    public static final Sampling GREEDY = new Sampling(0.0, 1.0, 0L);
}
