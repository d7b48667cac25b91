package dev.ripcord.stack;

/** The three Ripcord services the local stack runs, with their laptop default ports. */
public enum Role {
    GATEWAY("gateway", 8080),
    PREFILL("prefill", 8081),
    DECODE("decode", 8082);

    private final String shortName;
    private final int defaultPort;

    Role(String shortName, int defaultPort) {
        this.shortName = shortName;
        this.defaultPort = defaultPort;
    }

    /** {@code gateway}, {@code prefill} or {@code decode}: the log prefix and the option prefix. */
    public String shortName() {
        return shortName;
    }

    public int defaultPort() {
        return defaultPort;
    }

    /** The Maven module whose {@code -exec.jar} runs this role. */
    public String module() {
        return shortName + "-service";
    }
}
