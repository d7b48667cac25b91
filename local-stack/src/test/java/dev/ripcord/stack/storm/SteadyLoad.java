package dev.ripcord.stack.storm;

import java.time.Duration;
import java.time.Instant;
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
    private final AtomicLong strayAborts = new AtomicLong();
    private final AtomicLong partialNotPrefix = new AtomicLong();
    private final Map<String, Long> errors = new ConcurrentHashMap<>();
    private final List<FaultsVerdict.ErrorAnswer> errorAnswers = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Requests a gateway answered with 200, with when they were sent: the audit must hold each one. */
    private final Map<String, Instant> answered = new ConcurrentHashMap<>();

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
                    int g = random.nextInt(gateways.size());
                    StreamingClient gateway = gateways.get(g);
                    String id = "steady-" + thread + "-" + load.sent.incrementAndGet();
                    Outcome o;
                    Instant sent = Instant.now();
                    try {
                        o = gateway.start(StreamingClient.completion(stack.modelName(), Storm.ofBytes(bytes),
                                maxTokens, true), id).outcome().get(DEADLINE.toSeconds(), TimeUnit.SECONDS);
                    } catch (Exception e) {
                        load.withoutAnswer.incrementAndGet();
                        load.errorAnswers.add(new FaultsVerdict.ErrorAnswer(id, "gateway-" + (g + 1),
                                Storm.NO_ANSWER, sent, Instant.now()));
                        continue;
                    }
                    if (o.status() == 200 && !o.disconnected()) {
                        load.answered.put(id, sent);
                    }
                    Storm.Result result = Storm.classify(o, true);
                    if (result == Storm.Result.CANCELLED) {
                        load.strayAborts.incrementAndGet(); // nobody cancels a steady request
                    }
                    if (result == Storm.Result.COMPLETED) {
                        load.completed.incrementAndGet();
                        if (!o.text().equals(references.get(bytes + "/" + maxTokens))) {
                            load.wrong.incrementAndGet();
                        }
                    } else {
                        // A cancelled or failed answer's text is what was generated so far: a prefix of the reference.
                        if (!references.get(bytes + "/" + maxTokens).startsWith(o.text().replaceAll("\uFFFD+$", ""))) {
                            load.partialNotPrefix.incrementAndGet();
                        }
                    }
                    if (result == Storm.Result.FAILED) {
                        String error = o.error() == null ? String.valueOf(o.transportError()) : o.error();
                        load.errors.merge(o.status() + " " + (error.length() > 120 ? error.substring(0, 120) : error),
                                1L, Long::sum);
                        load.errorAnswers.add(new FaultsVerdict.ErrorAnswer(id, "gateway-" + (g + 1),
                                Storm.kind(o), sent, Instant.now()));
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

    /** Requests answered as cancelled, although nobody cancels a steady request. */
    long strayAborts() {
        return strayAborts.get();
    }

    long partialNotPrefix() {
        return partialNotPrefix.get();
    }

    long withoutAnswer() {
        return withoutAnswer.get();
    }

    long answeredWithError() {
        return errors.values().stream().mapToLong(Long::longValue).sum();
    }

    List<FaultsVerdict.ErrorAnswer> errorAnswers() {
        return List.copyOf(errorAnswers);
    }

    /** The IDs of the requests a gateway answered with 200 that were sent at or after {@code from}. */
    List<String> answeredSince(Instant from) {
        return answered.entrySet().stream().filter(e -> !e.getValue().isBefore(from)).map(Map.Entry::getKey)
                .toList();
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
