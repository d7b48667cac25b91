package dev.ripcord.stack.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The benches' command line: {@code --key=value} options, and {@code --stack-property=k=v} for the stack a bench
 * starts (added to the bench's defaults). Anything else prints the usage and exits with status 2.
 */
record BenchArgs(Map<String, String> options, Map<String, String> stackProperties) {

    static BenchArgs parse(String[] args, Map<String, String> stackDefaults, String usage) {
        Map<String, String> options = new LinkedHashMap<>();
        Map<String, String> stackProperties = new LinkedHashMap<>(stackDefaults);
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (!arg.startsWith("--") || eq < 0) {
                System.err.println("unexpected argument '" + arg + "'\n" + usage);
                System.exit(2);
            }
            String key = arg.substring(2, eq);
            String value = arg.substring(eq + 1);
            if (key.equals("stack-property")) {
                int kv = value.indexOf('=');
                stackProperties.put(value.substring(0, kv), value.substring(kv + 1));
            } else {
                options.put(key, value);
            }
        }
        return new BenchArgs(options, stackProperties);
    }
}
