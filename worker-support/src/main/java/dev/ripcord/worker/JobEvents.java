package dev.ripcord.worker;

import java.time.Duration;

import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;

/**
 * The event stream of one job (a prompt in prefill, a sequence in decode), read by the gateway as the job's HTTP
 * response. Every emission runs on the worker's {@link EngineLoop}, queued, so the sink has exactly one emitter and
 * no emission re-enters another (a subscriber that cancels inside {@code onNext} runs the cancel path on the same
 * thread). Buffered for a subscriber that has not subscribed yet or reads slowly: at most the job's own events,
 * which its protocol bounds (prefill: one per chunk plus three; decode: {@code max_tokens} plus two).
 *
 * @param <E> the event type
 */
public final class JobEvents<E> {

    private static final Sinks.EmitFailureHandler RETRY = Sinks.EmitFailureHandler.busyLooping(Duration.ofSeconds(1));

    private final Sinks.Many<E> sink = Sinks.many().unicast().onBackpressureBuffer();
    private volatile EngineLoop emitter;

    /** Binds the loop every emission runs on; before the first {@link #emit}. */
    public void emitOn(EngineLoop loop) {
        this.emitter = loop;
    }

    public Flux<E> flux() {
        return sink.asFlux();
    }

    public void emit(E event) {
        emitter.runInLoop(() -> sink.emitNext(event, RETRY));
    }

    public void end() {
        emitter.runInLoop(() -> sink.emitComplete(RETRY));
    }
}
