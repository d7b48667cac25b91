/**
 * The Llama-style decoder itself: packed weights and the forward pass over a batch of rows (one prefill chunk of
 * a single sequence, or one token of each sequence in a decode batch), reading and writing KV pages.
 *
 * <p>Internal to the engine; {@link dev.ripcord.engine.InferenceEngine} is the API.
 */
package dev.ripcord.engine.model;
