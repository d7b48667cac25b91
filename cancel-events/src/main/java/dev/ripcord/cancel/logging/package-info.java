/**
 * The request ID in log lines, on every thread a request is handled on: {@link dev.ripcord.cancel.logging.RequestMdc}
 * for plain threads, {@link dev.ripcord.cancel.logging.RequestIdThreadLocalAccessor} for Reactor pipelines.
 */
package dev.ripcord.cancel.logging;
