package dev.ripcord.stack.cancel;

import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import dev.ripcord.stack.LocalStackTest;
import dev.ripcord.stack.Role;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.TestStacks;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Explicit cancels with two gateways (and two prefill and two decode workers, every gateway routing to all): a
 * cancel works whichever gateway receives it, through the cancel relay on Kafka, and only for the request's owner.
 *
 * <p>This stack configuration (2 gateways, 2 prefill, 2 decode, no forwarding of unknown cancels) is shared with
 * {@link StormIT}: add assertions about several instances here or there rather than another configuration.
 *
 * <p>On the tiny model a completion may finish before a cancel reaches it, so the tests that need a request in flight
 * try again when the answer says it had finished (each try still checks everything it asserts).
 */
@LocalStackTest(gateways = 2, prefills = 2, decodes = 2,
        properties = {"ripcord.gateway.cancel-relay.answer-timeout=10s"})
class TwoGatewayCancelIT {

    private static final int TRIES = 20;

    @Test
    void aCancelSentToTheOtherGatewayCancelsTheRequestAtItsOwner(TestStack stack) throws Exception {
        StreamingClient first = new StreamingClient(stack.url(Role.GATEWAY, 0));
        StreamingClient second = new StreamingClient(stack.url(Role.GATEWAY, 1));
        assertThat(cancelInFlight(stack, first, second, false)).as("cancelled via the other gateway").isTrue();
        stack.awaitWorkersIdle();
    }

    @Test
    void deleteIsAnAliasOfTheCancelRouteAcrossGateways(TestStack stack) throws Exception {
        StreamingClient first = new StreamingClient(stack.url(Role.GATEWAY, 0));
        StreamingClient second = new StreamingClient(stack.url(Role.GATEWAY, 1));
        assertThat(cancelInFlight(stack, second, first, true)).as("DELETE via the other gateway").isTrue();
        assertThat(cancelInFlight(stack, first, first, true)).as("DELETE at the owning gateway").isTrue();
        stack.awaitWorkersIdle();
    }

    @Test
    void anotherKeyGets404AtEitherGatewayAndTheRequestRunsToItsEnd(TestStack stack) throws Exception {
        StreamingClient owner = new StreamingClient(stack.url(Role.GATEWAY, 0));
        StreamingClient otherHere = new StreamingClient(stack.url(Role.GATEWAY, 0), TestStacks.SECOND_API_KEY);
        StreamingClient otherThere = new StreamingClient(stack.url(Role.GATEWAY, 1), TestStacks.SECOND_API_KEY);
        String id = "two-gw-foreign-" + UUID.randomUUID();
        Call call = owner.start(StreamingClient.withUsage(
                StreamingClient.completion(stack.modelName(), "Hello there", 480, true)), id);
        call.firstText().get(1, TimeUnit.MINUTES);

        // All three at once: each 404 comes exactly the relay's answer timeout after its cancel (10 s here), whatever
        // the gateway knows; one after another they would only wait it three times.
        Future<Integer> cancelThere = atOnce(() -> otherThere.cancel(id));
        Future<Integer> deleteThere = atOnce(() -> otherThere.delete(id));
        Future<Integer> cancelHere = atOnce(() -> otherHere.cancel(id));
        assertThat(cancelThere.get(1, TimeUnit.MINUTES)).as("another key, at the other gateway").isEqualTo(404);
        assertThat(deleteThere.get(1, TimeUnit.MINUTES)).as("another key, DELETE at the other gateway").isEqualTo(404);
        assertThat(cancelHere.get(1, TimeUnit.MINUTES)).as("another key, at the owning gateway").isEqualTo(404);

        Outcome outcome = call.outcome().get(1, TimeUnit.MINUTES);
        assertThat(outcome.completed()).as("the owner's request was not cancelled: %s", outcome).isTrue();
        // Every token was generated (a sampled byte token may end in the next text event, so events can be fewer).
        assertThat(outcome.completionTokens()).isEqualTo(480);
        assertThat(outcome.finishReason()).isEqualTo("length");
        stack.awaitWorkersIdle();
    }

    @Test
    void anIdNoGatewayHoldsIsA404FromEitherGatewayWithoutForwarding(TestStack stack) throws Exception {
        // Whether the ID is unknown, or another key's at a gateway that refuses late or in time, the answer is the
        // same 404, and nothing is forwarded to the workers. Both at once, as above.
        String id = "two-gw-unknown-" + UUID.randomUUID();
        Future<Integer> cancel = atOnce(() -> new StreamingClient(stack.url(Role.GATEWAY, 1)).cancel(id));
        Future<Integer> delete = atOnce(() -> new StreamingClient(stack.url(Role.GATEWAY, 0)).delete(id + "-b"));
        assertThat(cancel.get(1, TimeUnit.MINUTES)).isEqualTo(404);
        assertThat(delete.get(1, TimeUnit.MINUTES)).isEqualTo(404);
    }

    /** {@code call} on a thread of its own: a cancel whose answer waits for the relay's timeout. */
    private static Future<Integer> atOnce(Callable<Integer> call) {
        FutureTask<Integer> task = new FutureTask<>(call);
        Thread.ofVirtual().name("two-gw-cancel").start(task);
        return task;
    }

    /**
     * Starts requests at {@code starter} and cancels each, once its first text arrived, at {@code canceller} with the
     * same key, until one is cancelled in flight (200; 404 means it had finished, which the outcome must confirm).
     */
    private static boolean cancelInFlight(TestStack stack, StreamingClient starter, StreamingClient canceller,
                                          boolean delete) throws Exception {
        for (int attempt = 0; attempt < TRIES; attempt++) {
            String id = "two-gw-" + UUID.randomUUID();
            Call call = starter.start(StreamingClient.completion(stack.modelName(), "Hello there", 480, true), id);
            call.firstText().get(1, TimeUnit.MINUTES);
            int status = delete ? canceller.delete(id) : canceller.cancel(id);
            assertThat(status).as("the owner's cancel: cancelled, or gone already").isIn(200, 404);
            Outcome outcome = call.outcome().get(1, TimeUnit.MINUTES);
            if (status == 200) {
                assertThat(outcome.aborted()).as("cancelled before the end, answered with finish_reason abort: %s",
                        outcome).isTrue();
                assertThat(outcome.text()).as("what was generated before the cancel").isNotEmpty();
                return true;
            }
            assertThat(outcome.completed()).as("it had finished: %s", outcome).isTrue();
        }
        return false;
    }
}
