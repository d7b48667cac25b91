/**
 * Logging, tracing and metrics wiring of the gateway; see docs/observability.md and docs/metrics.md.
 */
package dev.ripcord.gateway.observability;
