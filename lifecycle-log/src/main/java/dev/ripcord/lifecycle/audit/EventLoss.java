package dev.ripcord.lifecycle.audit;

/**
 * Events an instance lost: reported by its publisher's DROPPED marker ({@code reported}), or a gap in its sequence
 * numbers that no marker explains. While an instance has losses, a missing event of one of its requests is reported as
 * unverifiable, not as a violation.
 *
 * @param service  the instance's service
 * @param instance the instance
 * @param count    events lost
 * @param fromSeq  lowest lost sequence number
 * @param toSeq    highest lost sequence number
 * @param reported whether the publisher reported it (a DROPPED marker) rather than the audit inferring it
 */
public record EventLoss(String service, String instance, long count, long fromSeq, long toSeq, boolean reported) {

    @Override
    public String toString() {
        return "%d events lost on %s/%s between seq %d and %d%s".formatted(count, service, instance, fromSeq, toSeq,
                reported ? " (queue full)" : " (sequence gap)");
    }
}
