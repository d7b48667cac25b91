package dev.ripcord.model;

import java.nio.file.Path;

/**
 * A model ready to serve: a llama2.c checkpoint and its {@code tokenizer.bin}, both verified.
 *
 * @param name       the model id clients send (e.g. {@code stories15M})
 * @param checkpoint the checkpoint ({@code ripcord.engine.checkpoint})
 * @param tokenizer  the tokenizer ({@code ripcord.engine.tokenizer})
 */
public record ModelFiles(String name, Path checkpoint, Path tokenizer) {
}
