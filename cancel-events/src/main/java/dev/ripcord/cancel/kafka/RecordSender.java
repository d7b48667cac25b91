package dev.ripcord.cancel.kafka;

import java.util.concurrent.CompletableFuture;

import org.springframework.messaging.Message;

/** Hands one record to a producer binding. Seam between {@link KafkaSendQueue} and Spring Cloud Stream. */
@FunctionalInterface
interface RecordSender {

    /**
     * Sends on the calling thread, which may block (the Kafka producer waits up to {@code max.block.ms} for
     * metadata), so only {@link KafkaSendQueue}'s own thread calls it. Returns a future of the broker's ack.
     */
    CompletableFuture<?> send(String binding, Message<byte[]> message);
}
