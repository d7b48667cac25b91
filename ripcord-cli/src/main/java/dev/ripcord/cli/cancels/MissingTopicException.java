package dev.ripcord.cli.cancels;

/**
 * The topic a command reads does not exist on the broker it asked: nothing has been published to it yet (the services
 * create the cancellations and dead-letter topics when they first write, or at start where they may), or it is
 * misspelled, or this client may not describe it. One line, naming both; exit status {@value #EXIT_STATUS}.
 */
final class MissingTopicException extends RuntimeException {

    /** The exit status of a command that stops on a missing topic (docs/operations.md, "Exit status"). */
    static final int EXIT_STATUS = 3;

    MissingTopicException(String topic, String brokers) {
        super("topic " + topic + " does not exist on the broker at " + brokers
                + " (nothing was published to it yet, it is misspelled, or this client may not describe it)");
    }
}
