/**
 * Prefix caching across services: the keys of a prompt's complete KV pages ({@link
 * dev.ripcord.protocol.prefix.PrefixKeys}), the same in the prefill worker that caches the pages and in the
 * gateway that routes a request to the worker holding the longest cached prefix.
 */
package dev.ripcord.protocol.prefix;
