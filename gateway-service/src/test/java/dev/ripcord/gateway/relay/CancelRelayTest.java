package dev.ripcord.gateway.relay;

import java.time.Clock;
import java.time.Duration;
import java.util.Map;

import dev.ripcord.cancel.CancelPublisher;
import dev.ripcord.cancel.kafka.CancelProperties;
import dev.ripcord.gateway.lifecycle.RequestContext;
import dev.ripcord.gateway.lifecycle.RequestContexts;
import dev.ripcord.protocol.CancelReason;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.kafka.test.condition.EmbeddedKafkaCondition;
import org.springframework.kafka.test.context.EmbeddedKafka;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two gateways' relays on one real (embedded KRaft) broker: a cancel that reaches gateway B for a request in flight
 * at gateway A cancels it there when the caller owns it, and only then.
 */
@EmbeddedKafka(topics = CancelRelayTest.TOPIC, partitions = 3)
class CancelRelayTest {

    static final String TOPIC = "relay-test";
    /** Generous: a relay answered after this would read as "no answer", and a loaded CI machine is slow. */
    private static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(5);

    private static RequestContexts contextsA;
    private static RequestContexts contextsB;
    private static CancelRelay relayA;
    private static CancelRelay relayB;

    @BeforeAll
    static void twoGateways() {
        String brokers = EmbeddedKafkaCondition.getBroker().getBrokersAsString();
        CancelRelayProperties properties = new CancelRelayProperties(true, TOPIC, ANSWER_TIMEOUT);
        contextsA = contexts("gateway-a");
        contextsB = contexts("gateway-b");
        Map<String, Object> client = Map.of("bootstrap.servers", brokers);
        relayA = new CancelRelay(properties, contextsA, "gateway-a", client, client, Clock.systemUTC());
        relayB = new CancelRelay(properties, contextsB, "gateway-b", client, client, Clock.systemUTC());
    }

    @AfterAll
    static void close() {
        relayA.close();
        relayB.close();
    }

    private static RequestContexts contexts(String instance) {
        CancelProperties cancel = new Binder(new MapConfigurationPropertySource(Map.of(
                "ripcord.cancel.propagation", "in-band", "ripcord.cancel.instance-id", instance)))
                .bindOrCreate("ripcord.cancel", Bindable.of(CancelProperties.class));
        return new RequestContexts(CancelPublisher.discarding(), cancel, new SimpleMeterRegistry(), Clock.systemUTC(),
                Duration.ofMinutes(5));
    }

    @Test
    void theOwningGatewayCancelsARelayedCancelFromItsOwnerAndAcknowledges() {
        RequestContext ctx = contextsA.open("req-relay-owned", "key-aaaaaaaaaaaa", null);
        try {
            CancelRelay.Answer answer = relayB.ask("req-relay-owned", "key-aaaaaaaaaaaa").block();

            assertThat(answer).isEqualTo(CancelRelay.Answer.CANCELLED);
            assertThat(ctx.state()).isEqualTo(RequestContext.State.CANCELLED);
            assertThat(ctx.cancelReason()).isEqualTo(CancelReason.CLIENT_CANCEL);
        } finally {
            contextsA.close(ctx);
        }
    }

    @Test
    void aRelayedCancelFromAnotherKeyIsRefusedAndLeavesTheRequestRunning() {
        RequestContext ctx = contextsA.open("req-relay-foreign", "key-aaaaaaaaaaaa", null);
        try {
            CancelRelay.Answer answer = relayB.ask("req-relay-foreign", "key-bbbbbbbbbbbb").block();

            assertThat(answer).isEqualTo(CancelRelay.Answer.REFUSED);
            assertThat(ctx.state()).isEqualTo(RequestContext.State.ACTIVE);
        } finally {
            contextsA.close(ctx);
        }
    }

    @Test
    void aRelayedCancelForAnIdNoGatewayHoldsGetsNoAnswer() {
        assertThat(relayB.ask("req-relay-unknown", "key-aaaaaaaaaaaa").block())
                .isEqualTo(CancelRelay.Answer.NO_ANSWER);
    }

    @Test
    void aGatewayDoesNotAnswerItsOwnRelay() {
        // B holds it; B's own relay must not cancel it (the route checked B's requests before asking).
        RequestContext ctx = contextsB.open("req-relay-own", "key-aaaaaaaaaaaa", null);
        try {
            assertThat(relayB.ask("req-relay-own", "key-aaaaaaaaaaaa").block())
                    .isEqualTo(CancelRelay.Answer.NO_ANSWER);
            assertThat(ctx.state()).isEqualTo(RequestContext.State.ACTIVE);
        } finally {
            contextsB.close(ctx);
        }
    }

    @Test
    void aGatewayWhoseClockIsFarBehindStillHasItsRelayAnswered() {
        // Regression: the owner judged a relay's age by the asker's clock, so with clocks more than the answer timeout
        // apart every relay from the slower gateway was ignored as stale.
        String brokers = EmbeddedKafkaCondition.getBroker().getBrokersAsString();
        Map<String, Object> client = Map.of("bootstrap.servers", brokers);
        try (CancelRelay behind = new CancelRelay(new CancelRelayProperties(true, TOPIC, ANSWER_TIMEOUT), contexts("c"),
                "gateway-c", client, client, Clock.offset(Clock.systemUTC(), ANSWER_TIMEOUT.multipliedBy(-6)))) {
            RequestContext ctx = contextsA.open("req-relay-skewed", "key-aaaaaaaaaaaa", null);
            try {
                assertThat(behind.ask("req-relay-skewed", "key-aaaaaaaaaaaa").block())
                        .isEqualTo(CancelRelay.Answer.CANCELLED);
                assertThat(ctx.state()).isEqualTo(RequestContext.State.CANCELLED);
            } finally {
                contextsA.close(ctx);
            }
        }
    }
}
