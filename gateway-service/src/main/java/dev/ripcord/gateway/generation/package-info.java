/**
 * The serving core's contract, free of any wire protocol: what the HTTP edge hands the core and what comes back.
 *
 * <ul>
 *   <li>In: a validated, tokenized {@link dev.ripcord.gateway.generation.GenerationRequest}, carrying its request ID.</li>
 *   <li>Out: the {@link dev.ripcord.gateway.generation.GeneratedToken}s of a
 *       {@link dev.ripcord.gateway.generation.TokenGenerator}, turned into client text by
 *       {@link dev.ripcord.gateway.generation.TextDeltas} with a {@link dev.ripcord.gateway.generation.TextCodec}
 *       (incremental detokenization and stop strings).</li>
 *   <li>Stop: cancelling the generator's Flux; why is in the Reactor context
 *       ({@link dev.ripcord.gateway.generation.CancelCause}).</li>
 *   <li>Failures: the sealed {@link dev.ripcord.gateway.generation.GenerationException} kinds (cancelled, deadline
 *       exceeded, no worker available with a retry-after, worker failed, duplicate request ID). The core never
 *       speaks HTTP or OpenAI: the edge ({@code dev.ripcord.gateway.openai}) is the one place that turns these into
 *       status codes and OpenAI error bodies.</li>
 * </ul>
 *
 * <h2>Stop strings</h2>
 * Applied by the gateway on detokenized text: text before the earliest match is sent, the generation is cancelled
 * and {@code finish_reason} is {@code stop}. Text that may be the start of a stop string split across tokens is
 * held back until it is decided.
 */
@NullMarked
package dev.ripcord.gateway.generation;

import org.jspecify.annotations.NullMarked;
