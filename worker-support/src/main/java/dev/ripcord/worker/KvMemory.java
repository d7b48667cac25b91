package dev.ripcord.worker;

import java.lang.management.ManagementFactory;
import java.math.BigDecimal;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ripcord.engine.kv-memory}: the KV pool's memory budget, as a size ({@code 256MB}, {@code 1GiB},
 * {@code 536870912}) or as a share of the memory this process may use ({@code 25%}).
 *
 * <p>"The memory this process may use" is the container's memory limit when the JVM runs under one (the cgroup
 * limit, as the JVM reads it), else the machine's physical memory: {@code OperatingSystemMXBean.getTotalMemorySize()}.
 * Not the heap: the pool is off-heap (Panama FFM, in a shared-memory file or an arena of the transfer agent), and a
 * tmpfs file counts against the container's limit, not against {@code -Xmx} or {@code MaxDirectMemorySize}.
 *
 * <p>Units are binary, as in Spring's {@code DataSize}: {@code KB} and {@code KiB} are 1024 bytes, {@code MB} and
 * {@code MiB} 1024², and so on; no unit means bytes.
 *
 * @param text  what was configured
 * @param bytes the budget it gives, at least 1
 */
public record KvMemory(String text, long bytes) {

    private static final Pattern SIZE = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*([a-z]*)");
    private static final Map<String, Long> UNITS = Map.ofEntries(
            Map.entry("", 1L), Map.entry("b", 1L),
            Map.entry("kb", 1L << 10), Map.entry("kib", 1L << 10),
            Map.entry("mb", 1L << 20), Map.entry("mib", 1L << 20),
            Map.entry("gb", 1L << 30), Map.entry("gib", 1L << 30),
            Map.entry("tb", 1L << 40), Map.entry("tib", 1L << 40));

    public KvMemory {
        if (bytes < 1) {
            throw new IllegalArgumentException("ripcord.engine.kv-memory " + text + " gives " + bytes + " bytes");
        }
    }

    /** {@code text} against the memory this process may use ({@link #processMemory()}). */
    public static KvMemory parse(String text) {
        return parse(text, processMemory());
    }

    /**
     * {@code text}, a share of it read against {@code processMemory} bytes.
     *
     * @throws IllegalArgumentException for anything but a size or a percentage in (0, 100]
     */
    public static KvMemory parse(String text, long processMemory) {
        String t = text.strip().toLowerCase(Locale.ROOT);
        if (t.endsWith("%")) {
            BigDecimal percent = number(text, t.substring(0, t.length() - 1).strip());
            if (percent.signum() <= 0 || percent.compareTo(BigDecimal.valueOf(100)) > 0) {
                throw invalid(text);
            }
            long bytes = percent.multiply(BigDecimal.valueOf(processMemory))
                    .divide(BigDecimal.valueOf(100), java.math.RoundingMode.DOWN).longValue();
            return new KvMemory(text, bytes);
        }
        Matcher m = SIZE.matcher(t);
        if (!m.matches() || !UNITS.containsKey(m.group(2))) {
            throw invalid(text);
        }
        BigDecimal bytes = number(text, m.group(1)).multiply(BigDecimal.valueOf(UNITS.get(m.group(2))));
        if (bytes.compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0) {
            throw invalid(text);
        }
        return new KvMemory(text, bytes.longValue());
    }

    /** The container's memory limit when the JVM runs under one, else the machine's physical memory. */
    public static long processMemory() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
    }

    private static BigDecimal number(String text, String digits) {
        try {
            return new BigDecimal(digits);
        } catch (NumberFormatException e) {
            throw invalid(text);
        }
    }

    private static IllegalArgumentException invalid(String text) {
        return new IllegalArgumentException("ripcord.engine.kv-memory must be a size (256MB, 1GiB, bytes) or a share"
                + " of the memory the process may use (25%), got '" + text + "'");
    }
}
