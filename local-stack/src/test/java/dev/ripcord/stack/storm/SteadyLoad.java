package dev.ripcord.stack.storm;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.ripcord.engine.SamplingParams;
import dev.ripcord.stack.TestStack;
import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;

/**
 * Requests nobody cancels, a few at a time through every gateway, for as long as a fault schedule runs: so that
 * every fault meets traffic however soon the storm's requests end. Each answer is checked as the storm checks its
 * own: a completed text must be the reference's, and every client must get an answer (a completion or an error)
 * within its deadline.
 *
 * <p>Lifecycle: {@link #start} starts its threads; {@link #close()} stops them after their requests in flight end.
 */
final class SteadyLoad implements AutoCloseable {

    private static final Duration DEADLINE = Duration.ofMinutes(3);

    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean stopping;
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();
    private final AtomicLong wrong = new AtomicLong();
    private final AtomicLong withoutAnswer = new AtomicLong();
    private final Map<String, Long> errors = new ConcurrentHashMap<>();

    private SteadyLoad() {
    }

    static SteadyLoad start(TestStack stack, List<StreamingClient> gateways, int concurrency, long seed) {
        SteadyLoad load = new SteadyLoad();
        // References first, in this JVM: one per prompt and length.
        Map<String, String> references = new ConcurrentHashMap<>();
        for (int bytes : StormPlan.PROMPT_BYTES) {
            for (int maxTokens : StormPlan.MAX_TOKENS) {
                references.put(bytes + "/" + maxTokens, stack.reference().generate(Storm.ofBytes(bytes), maxTokens,
                        true, SamplingParams.greedy()).text());
            }
        }
        for (int t = 0; t < concurrency; t++) {
            Random random = new Random(seed * 31 + t);
            int thread = t;
            load.threads.add(Thread.ofVirtual().name("steady-" + t).start(() -> {
                while (!load.stopping) {
                    int bytes = StormPlan.PROMPT_BYTES[random.nextInt(StormPlan.PROMPT_BYTES.length)];
                    int maxTokens = StormPlan.MAX_TOKENS[random.nextInt(StormPlan.MAX_TOKENS.length)];
                    StreamingClient gateway = gateways.get(random.nextInt(gateways.size()));
                    String id = "steady-" + thread + "-" + load.sent.incrementAndGet();
                    Outcome o;
                    try {
                        o = gateway.start(StreamingClient.completion(stack.modelName(), Storm.ofBytes(bytes),
                                maxTokens, true), id).outcome().get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                    } catch (Exception e) {
                        load.withoutAnswer.incrementAndGet();
                        continue;
                    }
                    if (o.completed()) {
                        load.completed.incrementAndGet();
                        if (!o.text().equals(references.get(bytes + "/" + maxTokens))) {
                            load.wrong.incrementAndGet();
                        }
                    } else {
                        String error = o.error() == null ? String.valueOf(o.transportError()) : o.error();
                        load.errors.merge(o.status() + " " + (error.length() > 120 ? error.substring(0, 120) : error),
                                1L, Long::sum);
                        try {
                            Thread.sleep(50); // a gateway that is down refuses at once: no busy loop against it
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                }
            }));
        }
        return load;
    }

    long sent() {
        return sent.get();
    }

    long completed() {
        return completed.get();
    }

    long wrongOutputs() {
        return wrong.get();
    }

    long withoutAnswer() {
        return withoutAnswer.get();
    }

    long answeredWithError() {
        return errors.values().stream().mapToLong(Long::longValue).sum();
    }

    Map<String, Long> errors() {
        return new TreeMap<>(errors);
    }

    @Override
    public void close() throws InterruptedException {
        stopping = true;
        for (Thread t : threads) {
            t.join(DEADLINE.plusSeconds(30));
        }
    }
}
