package dev.ripcord.stack.serve;

/**
 * How one request of a phase ended, as its client saw it.
 *
 * @param ending     completed, left (the client disconnected on purpose before the end) or failed
 * @param failure    the kind of failure ({@code HTTP 503}, {@code connection error: ConnectException},
 *                   {@code timeout}, ...), null unless failed
 * @param tokens     output tokens of a completed request: the usage chunk's {@code completion_tokens}, else the
 *                   stream events that carried text
 * @param ttftNanos  sending to the first text (completed requests)
 * @param e2eNanos   sending to the end of the answer (completed requests)
 * @param itlNanos   the gaps between consecutive text events (completed requests)
 */
record RequestResult(Ending ending, String failure, int tokens, long ttftNanos, long e2eNanos, long[] itlNanos) {

    enum Ending {
        COMPLETED, LEFT, FAILED
    }

    static RequestResult completed(int tokens, long ttftNanos, long e2eNanos, long[] itlNanos) {
        return new RequestResult(Ending.COMPLETED, null, tokens, ttftNanos, e2eNanos, itlNanos);
    }

    static RequestResult left() {
        return new RequestResult(Ending.LEFT, null, 0, -1, -1, new long[0]);
    }

    static RequestResult failed(String failure) {
        return new RequestResult(Ending.FAILED, failure, 0, -1, -1, new long[0]);
    }
}
