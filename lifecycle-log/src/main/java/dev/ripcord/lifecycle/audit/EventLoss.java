package dev.ripcord.lifecycle.audit;

/**
 * Events one process lost: reported by its publisher's DROPPED marker ({@code reported}), or a gap in its sequence
 * numbers that no marker explains (its heartbeats make a lost tail such a gap). A missing event of a job of that
 * process is unverifiable, not a violation, only when the loss comes after the job's first event (see
 * {@link Excuses}).
 *
 * @param service  the instance's service
 * @param instance the instance
 * @param count    events lost
 * @param fromSeq  lowest lost sequence number
 * @param toSeq    highest lost sequence number
 * @param reported whether the publisher reported it (a DROPPED marker) rather than the audit inferring it
 * @param incarnation the process of the instance that lost them (null for builds that did not write one)
 */
public record EventLoss(String service, String instance, long count, long fromSeq, long toSeq, boolean reported,
                        String incarnation) {

    /** The process that lost the events, as {@link History#process} names it. */
    String process() {
        return incarnation == null ? instance : instance + "@" + incarnation;
    }

    @Override
    public String toString() {
        return "%d events lost on %s/%s between seq %d and %d%s".formatted(count, service, instance, fromSeq, toSeq,
                reported ? " (queue full)" : " (sequence gap)");
    }
}
