package dev.ripcord.stack.storm;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.bench.BenchUsage;

/**
 * {@code ./ripcord bench storm}: the 10,000-request random-phase cancel storm on a stack it starts
 * (tiny preset, 2 gateways, 2 prefill, 2 decode; the test stacks' properties), then the report of {@link Storm}.
 * Exits 0 when every check passed, 1 otherwise, 2 on a usage error.
 *
 * <pre>
 *   ./ripcord bench storm [--requests=10000] [--seed=42] [--concurrency=32] [--cancel-share=0.7]
 *                         [--propagation=both|kafka|in-band] [--stack-property=k=v ...]
 * </pre>
 */
public final class StormBench {

    static final String USAGE = BenchUsage.read(StormBench.class);

    private StormBench() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new LinkedHashMap<>();
        Map<String, String> properties = new LinkedHashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                System.err.println("unexpected argument '" + arg + "'\n" + USAGE);
                System.exit(2);
            }
            String key = arg.substring(2, eq);
            String value = arg.substring(eq + 1);
            if (key.equals("stack-property")) {
                int kv = value.indexOf('=');
                properties.put(value.substring(0, kv), value.substring(kv + 1));
            } else if (key.matches("requests|seed|concurrency|cancel-share|propagation")) {
                options.put(key, value);
            } else {
                System.err.println("unknown option --" + key + "\n" + USAGE);
                System.exit(2);
            }
        }
        int requests = Integer.parseInt(options.getOrDefault("requests", "10000"));
        long seed = Long.parseLong(options.getOrDefault("seed", "42"));
        int concurrency = Integer.parseInt(options.getOrDefault("concurrency", "32"));
        double cancelShare = Double.parseDouble(options.getOrDefault("cancel-share", "0.7"));
        properties.put("ripcord.cancel.propagation", options.getOrDefault("propagation", "both"));
        // As StormIT's stack: several gateways, so the relay's production-like answer delay.
        properties.putIfAbsent("ripcord.gateway.cancel-relay.answer-timeout", "10s");
        PrintStream out = System.out;

        Map<String, String> stackProperties = TestStacks.withDefaults(properties);
        TestStacks.Instances instances = new TestStacks.Instances(2, 2, 2);
        Path logDir = TestStacks.repositoryRoot().resolve("local-stack/target/bench-logs/storm");
        out.println("starting " + instances + " with " + stackProperties + " (logs in " + logDir + ") ...");
        boolean clean;
        try (TestStack stack = TestStack.start("storm", stackProperties, instances, logDir, null)) {
            out.printf("machine: %d cores, load average %s%n", Runtime.getRuntime().availableProcessors(),
                    loadAverage());
            StormPlan plan = StormPlan.draw(requests, seed, instances.gateways(), cancelShare);
            Storm.Report report = new Storm(stack, concurrency).run(plan, seed);
            report.print(out);
            out.printf("machine after: load average %s%n", loadAverage());
            clean = report.clean();
        }
        System.exit(clean ? 0 : 1);
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(Path.of("/proc/loadavg")).strip();
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }
}
