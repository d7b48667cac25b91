package dev.ripcord.gateway.model;

import dev.ripcord.protocol.Pairing;

import java.nio.file.Path;

import jakarta.validation.constraints.Min;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.ConstructorBinding;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.validation.annotation.Validated;

/**
 * The part of {@code ripcord.engine.*} the gateway reads: which model is served, so that it can tokenize, count
 * and limit tokens without loading any weights. The workers read the same keys, so one
 * {@code --ripcord.engine.preset=tiny} given to {@code ./ripcord up} configures all three services alike.
 *
 * @param preset     built-in model ({@code tiny} or {@code small}), used when no checkpoint is given
 * @param checkpoint a llama2.c checkpoint or a GGUF file; the gateway reads its header or metadata only (context
 *                   length, vocabulary, and for GGUF the tokenizer and chat template)
 * @param tokenizer  a llama2.c {@code tokenizer.bin}; without one a GGUF file's own tokenizer is used, else the
 *                   byte-level tokenizer
 * @param modelName  the model id clients send; default {@code ripcord-<preset>} or the checkpoint's file name
 * @param maxTokens  the server's upper bound for {@code max_tokens}
 * @param seed       the preset's weights' seed (the workers' {@code ripcord.engine.seed}): part of the model's
 *                   identity, which the gateway checks against each decode worker's ({@link #identity()})
 */
@Validated
@ConfigurationProperties("ripcord.engine")
public record ModelProperties(
        @DefaultValue("small") String preset,
        @Nullable Path checkpoint,
        @Nullable Path tokenizer,
        @Nullable String modelName,
        @DefaultValue("4096") @Min(1) int maxTokens,
        @DefaultValue("42") long seed) {

    /** The constructor Boot binds (a record with a second constructor must say which). */
    @ConstructorBinding
    public ModelProperties {
    }

    public ModelProperties(String preset, @Nullable Path checkpoint, @Nullable Path tokenizer,
                           @Nullable String modelName, int maxTokens) {
        this(preset, checkpoint, tokenizer, modelName, maxTokens, 42);
    }

    /**
     * The served model's identity as the workers compute it ({@link Pairing#modelIdentity}): a worker that reports
     * another one serves another model, and the gateway does not route to it.
     */
    public String identity() {
        return Pairing.modelIdentity(preset, seed, checkpoint, tokenizer);
    }
}
