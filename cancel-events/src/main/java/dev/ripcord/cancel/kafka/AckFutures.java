package dev.ripcord.cancel.kafka;

import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.springframework.cloud.stream.config.ProducerMessageHandlerCustomizer;
import org.springframework.integration.kafka.outbound.KafkaProducerMessageHandler;
import org.springframework.integration.kafka.support.KafkaIntegrationHeaders;
import org.springframework.messaging.MessageChannel;

/**
 * Gets the broker ack of a record sent through {@code StreamBridge}, which itself only says "handed to the producer".
 *
 * <p>Spring Integration's {@link KafkaProducerMessageHandler} (the Kafka binder's producer) sends the
 * {@code CompletableFuture<SendResult>} of each record carrying a {@link KafkaIntegrationHeaders#FUTURE_TOKEN} header
 * to its "futures channel", synchronously, on the sending thread, and strips the header from the Kafka record. This
 * customizer installs that channel on the handlers of our destinations only; {@link StreamBridgeRecordSender} tags
 * each message with a fresh token and picks its future up right after {@code send} returns. No correlation state
 * outlives one send call.
 *
 * <p>The Kafka binder takes a single {@link ProducerMessageHandlerCustomizer} bean, so a service must not define another:
 * ours would not be applied, and every publish would fail with a message saying so rather than silently lose acks.
 */
final class AckFutures implements ProducerMessageHandlerCustomizer<KafkaProducerMessageHandler<?, ?>> {

    private final Set<String> destinations;
    private final AtomicLong tokens = new AtomicLong();
    private final ConcurrentHashMap<Long, CompletableFuture<?>> handedOver = new ConcurrentHashMap<>();
    private final MessageChannel channel = (message, timeout) -> {
        Object token = message.getHeaders().get(KafkaIntegrationHeaders.FUTURE_TOKEN);
        if (token instanceof Long id && message.getPayload() instanceof CompletableFuture<?> future) {
            handedOver.put(id, future);
            return true;
        }
        return false;
    };

    AckFutures(Set<String> destinations) {
        this.destinations = Set.copyOf(destinations);
    }

    @Override
    public void configure(KafkaProducerMessageHandler<?, ?> handler, String destinationName) {
        if (destinations.contains(destinationName)) {
            handler.setFuturesChannel(channel);
        }
    }

    long nextToken() {
        return tokens.incrementAndGet();
    }

    /** The future the handler handed over for {@code token}, or null if it did not (not customised, or no send). */
    CompletableFuture<?> take(long token) {
        return handedOver.remove(token);
    }
}
