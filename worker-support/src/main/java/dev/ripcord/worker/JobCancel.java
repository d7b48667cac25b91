package dev.ripcord.worker;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import dev.ripcord.protocol.CancelReason;
import dev.ripcord.protocol.CancelSource;

/**
 * What a job knows about its cancellation: the first cancel that reached it (later ones are ignored), and whether
 * its abort has been counted, so that whichever path learns first that a cancel ended the job counts it, once.
 * Thread-safe: cancels arrive on Netty, Kafka and engine-loop threads.
 */
public final class JobCancel {

    /** Why and from where a cancel reached the job, and when it was observed ({@link System#nanoTime()}). */
    public record Request(CancelReason reason, CancelSource source, long observedNanos) {
    }

    private final AtomicReference<Request> request = new AtomicReference<>();
    private final AtomicBoolean abortCounted = new AtomicBoolean();

    /** Records the first cancel; returns whether this call recorded it. */
    public boolean request(CancelReason reason, CancelSource source) {
        return request.compareAndSet(null, new Request(reason, source, System.nanoTime()));
    }

    /** The first cancel, or null. */
    public Request request() {
        return request.get();
    }

    public boolean isRequested() {
        return request.get() != null;
    }

    /** True once: for the path that counts this job's abort. */
    public boolean claimAbortCount() {
        return abortCounted.compareAndSet(false, true);
    }
}
