package dev.ripcord.cancel.kafka;

import java.util.concurrent.CompletableFuture;

import io.micrometer.tracing.Span;
import org.springframework.cloud.stream.function.StreamBridge;
import org.springframework.integration.kafka.support.KafkaIntegrationHeaders;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.messaging.Message;

/** Sends through Spring Cloud Stream's {@link StreamBridge} and returns the broker-ack future via {@link AckFutures}. */
final class StreamBridgeRecordSender implements RecordSender {

    private final StreamBridge bridge;
    private final AckFutures acks;
    private final TraceHeaders trace;

    StreamBridgeRecordSender(StreamBridge bridge, AckFutures acks) {
        this(bridge, acks, TraceHeaders.NONE);
    }

    /** @param trace continues the trace a message carries around its send, see {@link TraceHeaders#continueTrace} */
    StreamBridgeRecordSender(StreamBridge bridge, AckFutures acks, TraceHeaders trace) {
        this.bridge = bridge;
        this.acks = acks;
        this.trace = trace;
    }

    @Override
    public CompletableFuture<?> send(String binding, Message<byte[]> message) {
        long token = acks.nextToken();
        Message<byte[]> tagged = MessageBuilder.fromMessage(message)
                .setHeader(KafkaIntegrationHeaders.FUTURE_TOKEN, token)
                .build();
        boolean accepted;
        try (TraceHeaders.Continued ignored = trace.continueTrace(message.getHeaders(), "ripcord.cancel publish",
                Span.Kind.PRODUCER)) {
            accepted = bridge.send(binding, tagged);
        } catch (RuntimeException e) {
            acks.take(token);
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<?> ack = acks.take(token);
        if (!accepted) {
            return CompletableFuture.failedFuture(
                    new IllegalStateException("binding " + binding + " did not accept the record"));
        }
        if (ack == null) {
            return CompletableFuture.failedFuture(new IllegalStateException("no broker-ack future for binding "
                    + binding + ": the Kafka producer handler was not customised by ripcord's AckFutures; "
                    + "is another ProducerMessageHandlerCustomizer bean defined?"));
        }
        return ack;
    }
}
