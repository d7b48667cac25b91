/**
 * The prefill/decode control-plane protocol: what the gateway, prefill and decode services say to each other.
 *
 * <p>All internal calls are plain HTTP POSTs whose responses are NDJSON streams ({@code application/x-ndjson}),
 * one event record per line. Streams are used even where a single answer would do, so that either side closing
 * the exchange is observable by the other: closing an internal stream is the in-band cancellation path.
 *
 * <pre>
 *  gateway                      decode                                 prefill
 *    | POST /internal/v1/decode  |                                        |
 *    |-------------------------->| reserve KV pages, open receive session |
 *    |<--- {type:RESERVED, transfer} (descriptor of the receive region)   |
 *    | POST /internal/v1/prefill {tokens, transfer}                       |
 *    |------------------------------------------------------------------>| queue (FIFO, bounded)
 *    |<------------------------------------------------- {type:QUEUED}   |
 *    |<------------------------------------------------- {type:STARTED}  |
 *    |                           |<===== KV pages of chunk 0 (kv-transfer)|
 *    |<------------------------------------------------- {type:CHUNK}    |
 *    |                           |<===== ... chunk n, done(first token) ==|
 *    |<------------------------------------------------- {type:DONE}     |
 *    |<--- {type:TOKEN} x N      | join batch, decode; the last token     |
 *    |                           | carries finishReason; free pages       |
 * </pre>
 */
package dev.ripcord.protocol;
