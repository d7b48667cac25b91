package dev.ripcord.engine.tools;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.format.gguf.GgmlType;

/**
 * Side-by-side speed of one llama2.c checkpoint served directly and as GGUF at several types (a benchmark that
 * prints figures, not a test):
 * <pre>
 * ./ripcord model-bench model.bin tokenizer.bin [--types=ckpt,f32,f16,q8_0,q4_0] [--threads=2] [--runs=5]
 *                       [--decode=128] [--prompts=128,240] [--dir=DIR]
 * </pre>
 * Each type is converted once (into {@code --dir}, default a temporary directory), loaded, warmed up, then measured
 * {@code runs} times, alternating types between runs so that a noisy neighbour hits all of them alike; figures are
 * medians. Decode: batch 1, greedy, {@code decode} tokens after the prompt "Once upon a time", timing only the
 * decode steps. Prefill: one chunk of each prompt length (a TinyStories-like text, repeated), with the matmul
 * and attention GFLOP/s that implies ({@link ModelConfig#flopsPerToken}, the last token's classifier included).
 * The {@code tok/CPU-s} columns divide by the calling thread's CPU time instead of wall-clock time: meaningful
 * (and robust to a busy machine) only with {@code --threads=1}.
 */
public final class ModelBench {
    private ModelBench() {
    }

    public static void main(String[] args) throws IOException {
        List<String> paths = new ArrayList<>();
        List<String> types = List.of("ckpt", "f32", "f16", "q8_0", "q4_0");
        int threads = 2;
        int runs = 5;
        int decode = 128;
        int[] prompts = {128, 240};
        Path dir = null;
        for (String a : args) {
            String v = a.contains("=") ? a.substring(a.indexOf('=') + 1) : "";
            if (a.startsWith("--types=")) {
                types = List.of(v.split(","));
            } else if (a.startsWith("--threads=")) {
                threads = Integer.parseInt(v);
            } else if (a.startsWith("--runs=")) {
                runs = Integer.parseInt(v);
            } else if (a.startsWith("--decode=")) {
                decode = Integer.parseInt(v);
            } else if (a.startsWith("--prompts=")) {
                prompts = Arrays.stream(v.split(",")).mapToInt(Integer::parseInt).toArray();
            } else if (a.startsWith("--dir=")) {
                dir = Path.of(v);
            } else {
                paths.add(a);
            }
        }
        if (paths.size() != 2) {
            System.err.println("usage: ./ripcord model-bench <model.bin> <tokenizer.bin> [--types=ckpt,f32,f16,q8_0,q4_0]"
                    + " [--threads=2] [--runs=5] [--decode=128] [--prompts=128,240] [--dir=DIR]");
            System.exit(2);
        }
        Path model = Path.of(paths.get(0));
        Path tokenizer = Path.of(paths.get(1));
        if (dir == null) {
            dir = Files.createTempDirectory("ripcord-bench");
        }
        Files.createDirectories(dir);
        EngineOptions options = EngineOptions.defaults().withThreads(threads).withMaxBatch(1).withKvPages(0);
        List<InferenceEngine> engines = new ArrayList<>();
        for (String t : types) {
            Path file = model;
            if (!t.equals("ckpt")) {
                file = dir.resolve("bench-" + t + ".gguf");
                if (!Files.exists(file)) {
                    GgufConvert.convert(model, tokenizer, file, GgufConvert.parseType(t), "bench");
                }
            }
            engines.add(InferenceEngine.load(file, t.equals("ckpt") ? tokenizer : null, options));
        }
        ModelConfig c = engines.getFirst().config();
        int[] text = engines.getFirst().tokenizer().encode(TEXT.repeat(8), true);
        int decodeTokens = Math.min(decode, c.contextLength() - 8);
        System.out.printf(Locale.ROOT, "model %s: dim %d, layers %d, heads %d/%d, hidden %d, vocab %d, context %d; %d threads, %d runs (medians)%n",
                model.getFileName(), c.dim(), c.layers(), c.heads(), c.kvHeads(), c.hiddenDim(), c.vocabSize(),
                c.contextLength(), threads, runs);
        for (InferenceEngine e : engines) {
            e.warmUp(java.time.Duration.ofSeconds(10));
            decodeRate(e, decodeTokens);
            for (int p : prompts) {
                prefillSeconds(e, text, Math.min(p, c.contextLength()));
            }
        }
        double[][] decodeRuns = new double[engines.size()][runs];
        double[][] decodeCpuRuns = new double[engines.size()][runs];
        double[][][] prefillCpuRuns = new double[engines.size()][prompts.length][runs];
        double[][][] prefillRuns = new double[engines.size()][prompts.length][runs];
        for (int r = 0; r < runs; r++) {
            for (int i = 0; i < engines.size(); i++) {
                long cpu0 = callerCpuNanos();
                decodeRuns[i][r] = decodeRate(engines.get(i), decodeTokens);
                decodeCpuRuns[i][r] = decodeTokens / ((callerCpuNanos() - cpu0) / 1e9);
                for (int p = 0; p < prompts.length; p++) {
                    int n = Math.min(prompts[p], c.contextLength());
                    cpu0 = callerCpuNanos();
                    prefillRuns[i][p][r] = prefillSeconds(engines.get(i), text, n);
                    prefillCpuRuns[i][p][r] = n / ((callerCpuNanos() - cpu0) / 1e9);
                }
            }
        }
        StringBuilder header = new StringBuilder(String.format(Locale.ROOT, "%-6s %14s %16s", "type", "decode tok/s",
                "tok/CPU-s"));
        for (int p : prompts) {
            int n = Math.min(p, c.contextLength());
            header.append(String.format(Locale.ROOT, " %18s %10s %12s", "prefill" + n + " tok/s", "GFLOP/s", "tok/CPU-s"));
        }
        System.out.println(header);
        for (int i = 0; i < engines.size(); i++) {
            StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%-6s %14.1f %16.1f", types.get(i),
                    median(decodeRuns[i]), median(decodeCpuRuns[i])));
            for (int p = 0; p < prompts.length; p++) {
                int n = Math.min(prompts[p], c.contextLength());
                double s = median(prefillRuns[i][p]);
                double flops = c.classifierFlops();
                for (int pos = 0; pos < n; pos++) {
                    flops += c.flopsPerToken(pos);
                }
                row.append(String.format(Locale.ROOT, " %18.0f %10.1f %12.0f", n / s, flops / s / 1e9,
                        median(prefillCpuRuns[i][p])));
            }
            System.out.println(row);
        }
        engines.forEach(InferenceEngine::close);
    }

    /**
     * CPU time of the calling thread: with {@code --threads=1} that is all the work, a figure a busy machine
     * disturbs far less than wall-clock time (with more threads it misses the workers' share: ignore it then).
     */
    static long callerCpuNanos() {
        // The caller's own CPU time (nanosecond resolution; the process total is only tick-accurate): with one
        // thread the caller does all the work.
        return java.lang.management.ManagementFactory.getThreadMXBean().getCurrentThreadCpuTime();
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    /** Greedy decode of {@code n} tokens after a short prompt; tokens per second of the decode steps alone. */
    static double decodeRate(InferenceEngine e, int n) {
        int[] prompt = e.tokenizer().encode("Once upon a time", true);
        Sequence s = e.newSequence(SamplingParams.greedy());
        try {
            e.prefill(s, prompt, 0, prompt.length);
            e.sample(s);
            long t0 = System.nanoTime();
            for (int i = 0; i < n && s.length() < e.config().contextLength(); i++) {
                e.decodeStep(List.of(s));
            }
            return n / ((System.nanoTime() - t0) / 1e9);
        } finally {
            e.free(s);
        }
    }

    /** Seconds to prefill the first {@code n} tokens of {@code text} as one chunk. */
    static double prefillSeconds(InferenceEngine e, int[] text, int n) {
        Sequence s = e.newSequence(SamplingParams.greedy());
        try {
            long t0 = System.nanoTime();
            for (int from = 0; from < n; from += e.options().maxChunkTokens()) {
                e.prefill(s, text, from, Math.min(n, from + e.options().maxChunkTokens()));
            }
            return (System.nanoTime() - t0) / 1e9;
        } finally {
            e.free(s);
        }
    }

    private static final String TEXT = "Once upon a time, there was a little girl named Lily. She loved to play outside in"
            + " the sunshine. One day, she saw a big, red ball in the sky. It was the sun! She thought it was so pretty."
            + " Lily wanted to play with the ball, but it was too high up in the sky. ";
}
