package dev.ripcord.worker;

import java.nio.file.Path;

import dev.ripcord.engine.KernelMode;
import dev.ripcord.engine.NativeIsa;
import dev.ripcord.engine.QuantizedDot;

import jakarta.validation.constraints.Min;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * {@code ripcord.engine.*}: the model a worker serves and how its engine runs. Prefill and decode must serve the
 * same model with the same seed (the KV cache one computes is read by the other), so give these to
 * {@code ./ripcord up}, which hands them to every service.
 *
 * @param preset         built-in model, {@code tiny} (tests) or {@code small} (default), used without a checkpoint
 * @param seed           seed of the preset's deterministic random weights
 * @param checkpoint     a llama2.c checkpoint or a GGUF file (detected by its magic) to serve instead of a preset
 * @param tokenizer      a llama2.c {@code tokenizer.bin}; without one the byte-level tokenizer is used
 * @param threads        compute threads; 0 means all available processors
 * @param pageTokens     positions per KV page (a multiple of 16)
 * @param kvPages        pages in the KV pool; 0 (the default) sizes it from {@code kvMemory}
 * @param kvMemory       the KV pool's memory budget when {@code kvPages} is 0: a size ({@code 256MB}, {@code 1GiB})
 *                       or a share of the memory the process may use ({@code 25%}); see {@link KvMemory}. The pool
 *                       never holds less than one full context
 * @param maxChunkTokens the largest prefill chunk the engine sizes its scratch memory for
 * @param maxBatch       the largest decode batch the engine sizes its scratch memory for
 * @param kernels        {@code native} (the default: the native decode kernels where the engine's jar has them, else
 *                       as {@code vector}), {@code vector} (Vector API kernels) or {@code scalar}, the Vector API
 *                       kernels' scalar twins, which give bit-identical results more slowly; for a JVM whose JIT
 *                       cannot compile the Vector API into vector instructions (started without C2,
 *                       {@code -XX:TieredStopAtLevel=1}), where the scalar twins are the faster of the two
 * @param modelName      the model id clients send (the gateway's {@code ripcord.engine.model-name}); here the value
 *                       of the {@code model_name} label on the worker's metrics. Default as at the gateway:
 *                       {@code ripcord-<preset>} or the checkpoint's file name without its extension
 * @param weightCache    a directory for images of the checkpoint's packed weights, which every worker on the host
 *                       that serves the same file maps read-only instead of packing a private copy (see
 *                       {@code WeightCache}); unset (the default): packed in the worker's own memory.
 *                       {@code ./ripcord up} sets it, so that a host's prefill and decode workers hold the weights
 *                       once; a directory that cannot be used is logged and the weights are packed privately
 * @param nativeIsa      the native kernels' variant: {@code auto} (the default: the fastest the CPU runs),
 *                       {@code generic}, {@code avx2}, {@code avxvnni}, {@code avx512vnni}; all give the same bits
 * @param quantizedDot   which forwards take the integer dot products over quantized weights: {@code decode} (the
 *                       default), {@code always}, {@code never}; changes results, so prefill and decode take the same
 * @param prefixCache    the prefix cache ({@link PrefixCache})
 */
@Validated
@ConfigurationProperties("ripcord.engine")
public record EngineProperties(
        @DefaultValue("small") String preset,
        @DefaultValue("42") long seed,
        @Nullable Path checkpoint,
        @Nullable Path tokenizer,
        @DefaultValue("0") @Min(0) int threads,
        @DefaultValue("64") @Min(16) int pageTokens,
        @DefaultValue("0") @Min(0) int kvPages,
        @DefaultValue("256MB") String kvMemory,
        @DefaultValue("2048") @Min(1) int maxChunkTokens,
        @DefaultValue("32") @Min(1) int maxBatch,
        @DefaultValue("native") KernelMode kernels,
        @Nullable String modelName,
        @Nullable Path weightCache,
        @DefaultValue("auto") NativeIsa nativeIsa,
        @DefaultValue("decode") QuantizedDot quantizedDot,
        @DefaultValue @Nullable PrefixCache prefixCache) {

    /**
     * {@code ripcord.engine.prefix-cache.*}: the prefill worker's prefix cache, which keeps the KV pages of prompt
     * prefixes after their requests end, inside the KV pool's budget (a decode worker never fills it).
     *
     * @param enabled  whether complete prompt pages are kept and reused; default true
     * @param maxPages the most cached pages no request holds; 0 (the default): as many as the pool has room for,
     *                 evicted least recently used first when a request needs a page
     */
    public record PrefixCache(@DefaultValue("true") boolean enabled, @DefaultValue("0") @Min(0) int maxPages) {

        /** The engine's {@code prefixCachePages}: 0 when off, else the cap ({@link Integer#MAX_VALUE}: none). */
        public int enginePages() {
            return !enabled ? 0 : maxPages == 0 ? Integer.MAX_VALUE : maxPages;
        }
    }

    /** {@link #prefixCache} with its defaults where none was bound (a record built by hand). */
    public PrefixCache prefixCacheOrDefault() {
        return prefixCache == null ? new PrefixCache(true, 0) : prefixCache;
    }

    /** The served model's id, as the gateway names it (see {@code modelName}). */
    public String servedModelName() {
        if (modelName != null) {
            return modelName;
        }
        if (checkpoint != null) {
            String file = checkpoint.getFileName().toString();
            int dot = file.lastIndexOf('.');
            return dot > 0 ? file.substring(0, dot) : file;
        }
        return "ripcord-" + preset.trim().toLowerCase(java.util.Locale.ROOT);
    }
}
