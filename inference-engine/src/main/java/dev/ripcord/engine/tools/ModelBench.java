package dev.ripcord.engine.tools;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import dev.ripcord.engine.EngineOptions;
import dev.ripcord.engine.KernelMode;
import dev.ripcord.engine.NativeIsa;
import dev.ripcord.engine.InferenceEngine;
import dev.ripcord.engine.ModelConfig;
import dev.ripcord.engine.SamplingParams;
import dev.ripcord.engine.Sequence;
import dev.ripcord.format.gguf.GgmlType;
import dev.ripcord.format.gguf.GgufFile;
import dev.ripcord.format.gguf.GgufTensorInfo;

/**
 * Side-by-side speed of model files (a benchmark that prints figures, not a test):
 * <pre>
 * ./ripcord model-bench A.gguf [B.gguf …] [--threads=2] [--runs=5] [--decode=128] [--prompts=128,512] [--json]
 *     [--kernels=native,vector] [--native-isa=avx2]
 * ./ripcord model-bench model.bin tokenizer.bin [--types=ckpt,f32,f16,q8_0,q4_0] [--dir=DIR] [options as above]
 * </pre>
 * A GGUF file brings its own tokenizer; a llama2.c checkpoint is followed by its {@code tokenizer.bin}, and with
 * {@code --types} (default {@code ckpt,f32,f16,q8_0,q4_0} when only a checkpoint is named) it is also converted to
 * those GGUF types (into {@code --dir}, default a temporary directory). Every model is loaded, warmed up, then
 * measured {@code runs} rounds, the models interleaved round by round so that a noisy neighbour hits all of them
 * alike; the table gives medians. Decode: batch 1, greedy, {@code decode} tokens after the prompt "Once upon a
 * time", timing only the decode steps. Prefill: one sequence of each prompt length (a TinyStories-like text,
 * repeated) in chunks of the engine's maximum. Each figure comes with what it implies: decode's weight bandwidth
 * (the bytes of every matrix a token reads, times tokens per second) and the matmul and attention GFLOP/s
 * ({@link ModelConfig#flopsPerToken}, the classifier included once per decode step and once per prompt), and
 * decode's ceiling: before each decode run the file's own mapping is read end to end by as many threads as the
 * engine has ({@link WeightStream}), and that rate divided by the weight bytes per token is the {@code limit tok/s}
 * that the {@code of limit} column compares decode with.
 * {@code --kernels} (default {@code native}) loads each GGUF file once per kernel mode named, so native and Vector
 * API kernels are measured in the same rounds; {@code --native-isa} forces a native variant. Every row names its
 * kernels ({@code native-avx2+vector-256}: native decode kernels, the Vector API at 256 bits for the rest).
 * {@code --json} prints one object per model and round as it is measured, e.g.
 * {@code {"file":…,"type":…,"kernels":"native-avx2+vector-256","threads":2,"cpu":…,"decode_tok_s":…,"prefill_tok_s":{"128":…},…,
 * "stream_gb_s":…,"decode_limit_tok_s":…}}. The CPU model
 * and the load average are printed with the figures: this machine kind differs in CPU, and shares its cores.
 * The {@code tok/CPU-s} column divides by the calling thread's CPU time: meaningful only with {@code --threads=1}.
 */
public final class ModelBench {
    private ModelBench() {
    }

    /** One model under test: its label, type, the bytes of weights a decode step reads. */
    record Model(Path path, String file, String type, long streamedBytes, InferenceEngine engine, double loadSeconds) {
    }

    public static void main(String[] args) throws IOException {
        List<String> paths = new ArrayList<>();
        List<String> types = null;
        int threads = 2;
        int runs = 5;
        int decode = 128;
        int[] prompts = {128, 512};
        boolean json = false;
        Path dir = null;
        List<KernelMode> kernels = List.of(KernelMode.NATIVE);
        NativeIsa isa = NativeIsa.AUTO;
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
            } else if (a.startsWith("--kernels=")) {
                kernels = Arrays.stream(v.split(",")).map(k -> KernelMode.valueOf(k.trim().toUpperCase(Locale.ROOT)))
                        .toList();
            } else if (a.startsWith("--native-isa=")) {
                isa = NativeIsa.valueOf(v.trim().toUpperCase(Locale.ROOT));
            } else if (a.equals("--json")) {
                json = true;
            } else if (a.startsWith("--")) {
                usage("unknown option " + a);
            } else {
                paths.add(a);
            }
        }
        if (paths.isEmpty()) {
            usage("no model file");
        }
        // Scratch sized for the longest prompt, not the default 2048-token chunk: several 1B models side by side.
        EngineOptions base = EngineOptions.defaults().withThreads(threads).withMaxBatch(1).withKvPages(0)
                .withMaxChunkTokens(Math.max(64, Arrays.stream(prompts).max().orElse(64))).withNativeIsa(isa);
        List<Model> models = new ArrayList<>();
        for (int i = 0; i < paths.size(); i++) {
            Path file = Path.of(paths.get(i));
            if (GgufFile.isGguf(file)) {
                for (KernelMode mode : kernels) {
                    models.add(gguf(file, base.withKernels(mode)));
                }
                continue;
            }
            EngineOptions options = base.withKernels(kernels.getFirst());
            if (i + 1 >= paths.size()) {
                usage(file + " is not GGUF, so it must be a llama2.c checkpoint followed by its tokenizer.bin");
            }
            Path tokenizer = Path.of(paths.get(++i));
            List<String> convert = types != null ? types
                    : paths.size() == 2 ? List.of("ckpt", "f32", "f16", "q8_0", "q4_0") : List.of("ckpt");
            if (dir == null) {
                dir = Files.createTempDirectory("ripcord-bench");
            }
            Files.createDirectories(dir);
            for (String t : convert) {
                if (t.equals("ckpt")) {
                    long t0 = System.nanoTime();
                    InferenceEngine e = InferenceEngine.load(file, tokenizer, options);
                    models.add(new Model(file, file.getFileName().toString(), "ckpt (F32)", streamedF32(e.config()), e,
                            (System.nanoTime() - t0) / 1e9));
                } else {
                    Path out = dir.resolve(file.getFileName() + "-" + t + ".gguf");
                    if (!Files.exists(out)) {
                        GgufConvert.convert(file, tokenizer, out, GgufConvert.parseType(t), "bench");
                    }
                    models.add(gguf(out, options));
                }
            }
        }
        String cpu = cpuModel();
        int[] text = models.getFirst().engine().tokenizer().encode(TEXT.repeat(64), true);
        if (!json) {
            System.out.printf(Locale.ROOT, "CPU %s, %d cores online; %d threads, %d runs (medians), decode %d tokens;"
                            + " load average %s%n", cpu, Runtime.getRuntime().availableProcessors(), threads, runs,
                    decode, loadAverage());
            for (Model m : models) {
                ModelConfig c = m.engine().config();
                System.out.printf(Locale.ROOT, "  %s: %s, dim %d, layers %d, heads %d/%d, hidden %d, vocab %d, context %d;"
                                + " %.0f MB of weights read per token; loaded in %.1f s: %s; kernels %s%n", m.file(),
                        m.type(), c.dim(), c.layers(), c.heads(), c.kvHeads(), c.hiddenDim(), c.vocabSize(),
                        c.contextLength(), m.streamedBytes() / 1e6, m.loadSeconds(), m.engine().weightsDescription(),
                        m.engine().kernelName());
            }
        }
        for (Model m : models) {
            m.engine().warmUp(java.time.Duration.ofSeconds(10));
            decodeRate(m.engine(), Math.min(decode, 16));
            for (int p : prompts) {
                prefillSeconds(m.engine(), text, Math.min(Math.min(p, 64), m.engine().config().contextLength()));
            }
        }
        int n = models.size();
        double[][] decodeRuns = new double[n][runs];
        double[][] decodeCpuRuns = new double[n][runs];
        double[][] streamRuns = new double[n][runs];
        double[][][] prefillRuns = new double[n][prompts.length][runs];
        for (int r = 0; r < runs; r++) {
            for (int i = 0; i < n; i++) {
                Model m = models.get(i);
                ModelConfig c = m.engine().config();
                int decodeTokens = Math.min(decode, c.contextLength() - 8);
                streamRuns[i][r] = WeightStream.bytesPerSecond(m.path(), threads, 3);
                long cpu0 = callerCpuNanos();
                decodeRuns[i][r] = decodeRate(m.engine(), decodeTokens);
                decodeCpuRuns[i][r] = decodeTokens / ((callerCpuNanos() - cpu0) / 1e9);
                StringBuilder prefillJson = new StringBuilder();
                for (int p = 0; p < prompts.length; p++) {
                    int len = Math.min(Math.min(prompts[p], c.contextLength()), text.length);
                    prefillRuns[i][p][r] = len / prefillSeconds(m.engine(), text, len);
                    prefillJson.append(p == 0 ? "" : ",").append(String.format(Locale.ROOT, "\"%d\":%.2f",
                            prompts[p], prefillRuns[i][p][r]));
                }
                if (json) {
                    System.out.printf(Locale.ROOT, "{\"file\":\"%s\",\"type\":\"%s\",\"kernels\":\"%s\","
                                    + "\"threads\":%d,\"cpu\":\"%s\",\"round\":%d,\"load1\":%s,\"decode_tok_s\":%.2f,\"prefill_tok_s\":{%s},"
                                    + "\"weight_bytes\":%d,\"stream_gb_s\":%.2f,\"decode_limit_tok_s\":%.2f}%n",
                            escape(m.file()), m.type(), m.engine().kernelName(), threads, escape(cpu), r + 1, loadAverage().split(" ")[0],
                            decodeRuns[i][r], prefillJson, m.streamedBytes(), streamRuns[i][r] / 1e9,
                            streamRuns[i][r] / m.streamedBytes());
                }
            }
        }
        if (!json) {
            StringBuilder header = new StringBuilder(String.format(Locale.ROOT,
                    "%-28s %-12s %-24s %12s %9s %11s %8s %9s %10s", "file", "type", "kernels", "decode tok/s", "GB/s", "limit tok/s", "of limit", "GFLOP/s", "tok/CPU-s"));
            for (int p : prompts) {
                header.append(String.format(Locale.ROOT, " %17s %9s", "prefill" + p + " tok/s", "GFLOP/s"));
            }
            System.out.println(header);
            for (int i = 0; i < n; i++) {
                Model m = models.get(i);
                ModelConfig c = m.engine().config();
                int decodeTokens = Math.min(decode, c.contextLength() - 8);
                double rate = median(decodeRuns[i]);
                double flopsPerStep = c.flopsPerToken(4 + decodeTokens / 2) + c.classifierFlops();
                double limit = median(streamRuns[i]) / m.streamedBytes();
                StringBuilder row = new StringBuilder(String.format(Locale.ROOT,
                        "%-28s %-12s %-24s %12.1f %9.1f %11.1f %7.0f%% %9.1f %10.1f", m.file(), m.type(),
                        m.engine().kernelName(), rate,
                        m.streamedBytes() * rate / 1e9, limit, 100 * rate / limit, flopsPerStep * rate / 1e9,
                        median(decodeCpuRuns[i])));
                for (int p = 0; p < prompts.length; p++) {
                    int len = Math.min(Math.min(prompts[p], c.contextLength()), text.length);
                    double flops = c.classifierFlops();
                    for (int pos = 0; pos < len; pos++) {
                        flops += c.flopsPerToken(pos);
                    }
                    double tps = median(prefillRuns[i][p]);
                    row.append(String.format(Locale.ROOT, " %17.1f %9.1f", tps, flops * tps / len / 1e9));
                }
                System.out.println(row);
            }
            System.out.printf(Locale.ROOT, "CPU %s; load average after: %s%n", cpu, loadAverage());
        }
        models.forEach(m -> m.engine().close());
    }

    private static void usage(String problem) {
        System.err.println("model-bench: " + problem);
        System.err.println("usage: ./ripcord model-bench A.gguf [B.gguf ...] [--threads=2] [--runs=5] [--decode=128]"
                + " [--prompts=128,512] [--json]"
                + " [--kernels=native,vector,scalar] [--native-isa=auto|generic|avx2|avxvnni|avx512vnni]");
        System.err.println("       ./ripcord model-bench model.bin tokenizer.bin [--types=ckpt,f32,f16,q8_0,q4_0] [--dir=DIR]"
                + " [options as above]");
        System.err.println("       the default model's checkpoint: ${XDG_CACHE_HOME:-~/.cache}/ripcord/models/stories15M/"
                + "{model.bin,tokenizer.bin} (./ripcord fetch-model fetches it and prints the paths)");
        System.exit(2);
    }

    private static Model gguf(Path file, EngineOptions options) throws IOException {
        long streamed = 0;
        java.util.Map<GgmlType, Long> bytesByType = new java.util.EnumMap<>(GgmlType.class);
        long matrixBytes = 0;
        try (GgufFile f = GgufFile.open(file)) {
            boolean tied = f.tensor("output.weight").isEmpty();
            for (GgufTensorInfo t : f.tensors()) {
                if (t.rank() < 2) {
                    streamed += t.byteSize();
                    continue;
                }
                matrixBytes += t.byteSize();
                bytesByType.merge(t.type(), t.byteSize(), Long::sum);
                if (!t.name().equals("token_embd.weight") || tied) {
                    streamed += t.byteSize();
                }
            }
        }
        StringBuilder type = new StringBuilder();
        final long total = matrixBytes;
        bytesByType.entrySet().stream().sorted((a, b) -> Long.compare(b.getValue(), a.getValue()))
                .filter(e -> e.getValue() * 10 >= total)
                .forEach(e -> type.append(type.isEmpty() ? "" : "+").append(e.getKey()));
        long t0 = System.nanoTime();
        InferenceEngine e = InferenceEngine.load(file, null, options);
        return new Model(file, file.getFileName().toString(), type.toString(), streamed, e,
                (System.nanoTime() - t0) / 1e9);
    }

    /** A llama2.c checkpoint's matrices in F32: every projection and the classifier. */
    private static long streamedF32(ModelConfig c) {
        long perLayer = (long) c.dim() * c.dim() * 2 + 2L * c.dim() * c.kvDim() + 3L * c.dim() * c.hiddenDim();
        return 4L * (perLayer * c.layers() + (long) c.dim() * c.vocabSize());
    }

    /** The CPU's model name, with the vector extensions the kernels care about (machines of one name differ). */
    static String cpuModel() {
        try {
            String model = null;
            List<String> features = new ArrayList<>();
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (model == null && line.startsWith("model name")) {
                    model = line.substring(line.indexOf(':') + 1).trim();
                } else if (features.isEmpty() && line.startsWith("flags")) {
                    List<String> flags = List.of(line.substring(line.indexOf(':') + 1).trim().split(" "));
                    for (String f : List.of("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_vp2intersect")) {
                        if (flags.contains(f)) {
                            features.add(f);
                        }
                    }
                }
            }
            if (model != null) {
                return model + (features.isEmpty() ? "" : " (" + String.join(" ", features) + ")");
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: fall through to the JVM's description
        }
        return System.getProperty("os.arch") + " (model unknown)";
    }

    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException | RuntimeException e) {
            return String.format(Locale.ROOT, "%.2f",
                    java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        }
    }

    private static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"");
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
