package dev.ripcord.protocol;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Objects;

/**
 * What a prefill and a decode worker must have in common to share a request's KV cache: the same model and the
 * same numeric definition. Decode sends its own with {@link DecodeEvent.Reserved}; the gateway checks the model
 * against its own ({@link #modelIdentity}) and hands decode's pairing to prefill in the {@link PrefillRequest},
 * and prefill refuses (409, {@link Failed#PAIRING_MISMATCH}) to push KV to a decode worker whose pairing is not
 * its own. A mixed deployment (pods of two model versions, or of two kernel builds) so never computes one half of
 * an answer with one model and the other half with another.
 *
 * @param model    the model's identity, {@link #modelIdentity}
 * @param numerics the engine's numeric definition ({@code InferenceEngine.numerics()}, e.g.
 *                 {@code lanes=16,int8=native,quantizedDot=decode})
 */
public record Pairing(String model, String numerics) {

    public Pairing {
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(numerics, "numerics");
    }

    /**
     * What differs between this (the local worker's) and {@code peer}'s, for an error message and a log line that
     * name both values; null if they pair.
     */
    public String mismatch(Pairing peer) {
        if (!model.equals(peer.model)) {
            return "model " + model + " here, " + peer.model + " at the peer";
        }
        if (!numerics.equals(peer.numerics)) {
            return "numerics " + numerics + " here, " + peer.numerics + " at the peer";
        }
        return null;
    }

    /**
     * A model's identity, the same for every service that serves it, computed from the configuration all three
     * services read ({@code ripcord.engine.*}): for a checkpoint, the SHA-256 of the file's bytes
     * ({@code sha256:<hex>}), followed by {@code +tokenizer=sha256:<hex>} when a separate tokenizer file is given;
     * for a built-in preset, {@code preset:<name>/seed:<seed>} (its weights are a function of the two). Reads the
     * whole checkpoint once (about a second per GB).
     */
    public static String modelIdentity(String preset, long seed, Path checkpoint, Path tokenizer) {
        String weights = checkpoint == null
                ? "preset:" + preset.trim().toLowerCase(Locale.ROOT) + "/seed:" + seed
                : sha256(checkpoint);
        return tokenizer == null ? weights : weights + "+tokenizer=" + sha256(tokenizer);
    }

    /** {@code sha256:<lower-case hex>} of {@code file}'s bytes. */
    static String sha256(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            byte[] buffer = new byte[1 << 20];
            for (int n; (n = in.read(buffer)) > 0; ) {
                digest.update(buffer, 0, n);
            }
            return "sha256:" + HexFormat.of().formatHex(digest.digest());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + " to compute the model's identity", e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
