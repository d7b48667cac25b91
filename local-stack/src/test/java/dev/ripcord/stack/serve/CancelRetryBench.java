package dev.ripcord.stack.serve;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.ripcord.stack.cancel.StreamingClient;
import dev.ripcord.stack.cancel.StreamingClient.Call;
import dev.ripcord.stack.cancel.StreamingClient.Outcome;
import dev.ripcord.stack.serve.ServeBench.Endpoint;
import dev.ripcord.stack.serve.ServeOptions.CancelRetry;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code ./ripcord bench serve --scenario=cancel-retry}: what a client that gives up on a long prompt and sends it
 * again gets back. Per round and target, one prompt of about {@code --retry-prompt-tokens} words is sent three times,
 * one after another, streamed at temperature 0:
 *
 * <ol>
 *   <li><b>cold</b>, under a {@code cache_salt} of its own, so no cached page of an earlier request can serve it: its
 *       time to first token and its text are the reference;</li>
 *   <li><b>cancelled</b>, under a second salt: the client closes its connection {@code --cancel-at} (a share) of the
 *       cold run's time to first token after sending, while the prompt is still being prefilled;</li>
 *   <li><b>retry</b>, under the second salt, {@code --pause} after the disconnect: a server that keeps the complete
 *       pages of a cancelled prefill serves their part of the prompt from its cache.</li>
 * </ol>
 *
 * <p>For each retry it reports the share of the prompt the server says it took from its cache
 * ({@code usage.prompt_tokens_details.cached_tokens} over {@code prompt_tokens}), the retry's time to first token
 * over the cold run's, the bound that ratio is held to (the unfinished share plus 0.1: the retry should cost no more
 * than the part of the prompt the cancelled request had not computed, and a little), and whether the retry's text
 * equals the cold run's, character for character. A server that ignores {@code cache_salt} (llama-server) may serve
 * the cold run of a later round from the earlier rounds' cache; the report shows the cold run's cached tokens, so
 * that is visible.
 */
final class CancelRetryBench {

    /** One request's result: whether it completed, its time to first token, its text and its usage. */
    record Leg(boolean completed, long ttftNanos, String text, int promptTokens, int cachedTokens, String failure) {
    }

    /**
     * One round against one target.
     *
     * @param cold             the reference request
     * @param cancelAfterNanos when the second request's client disconnected, from sending
     * @param cancelledEarly   whether that disconnect came before its first token (else the cancel came too late to
     *                         stop a prefill, and the round measures nothing of interest)
     * @param retry            the retry
     */
    record Round(String target, int round, Leg cold, long cancelAfterNanos, boolean cancelledEarly, Leg retry) {

        /** The share of the retry's prompt served from the cache, or NaN when the server did not say. */
        double cachedShare() {
            return retry.promptTokens() > 0 && retry.cachedTokens() >= 0
                    ? (double) retry.cachedTokens() / retry.promptTokens() : Double.NaN;
        }

        /** The retry's time to first token over the cold run's, or NaN. */
        double ratio() {
            return cold.completed() && retry.completed() && cold.ttftNanos() > 0
                    ? (double) retry.ttftNanos() / cold.ttftNanos() : Double.NaN;
        }

        /** What {@link #ratio()} is held to: the share the cancelled request had not computed, plus 0.1. */
        double bound() {
            double cached = cachedShare();
            return Double.isNaN(cached) ? Double.NaN : 1 - cached + 0.1;
        }

        boolean sameOutput() {
            return cold.completed() && retry.completed() && cold.text().equals(retry.text());
        }
    }

    private final ServeOptions options;
    private final CancelRetry scenario;
    private final String run;
    private final PrintStream progress;

    CancelRetryBench(ServeOptions options, String run, PrintStream progress) {
        this.options = options;
        this.scenario = options.cancelRetry();
        this.run = run;
        this.progress = progress;
    }

    void header(PrintStream out, ServeReport.Machine machine, List<Endpoint> endpoints) {
        out.printf("serve bench, cancel then retry, %s; CPU: %s, %d cores; load average %s at the start%n",
                machine.when(), machine.cpu(), machine.cores(), machine.loadAtStart());
        out.printf("targets: %s%n", String.join("; ", endpoints.stream()
                .map(e -> e.name() + " = " + e.url() + " (model " + e.model() + ")").toList()));
        out.printf("load: per round a prompt of %d words (about one token each), cold, then abandoned at %.2f of the "
                        + "cold time to first token, then retried; max_tokens %d, temperature 0, EOS ignored; %d "
                        + "rounds; seed %d%n", scenario.promptTokens(), scenario.cancelAt(), options.maxTokens(),
                options.rounds(), options.seed());
    }

    /** Every round, the targets taking turns (in reverse order in even rounds). */
    List<Round> run(List<Endpoint> endpoints) throws InterruptedException {
        List<Round> rounds = new ArrayList<>();
        for (int round = 1; round <= options.rounds(); round++) {
            List<Endpoint> order = new ArrayList<>(endpoints);
            if (round % 2 == 0) {
                Collections.reverse(order);
            }
            String prompt = MultiTurnBench.words(new Random(options.seed() * 131 + round), scenario.promptTokens())
                    .strip();
            for (Endpoint endpoint : order) {
                Round r = round(endpoint, round, prompt);
                rounds.add(r);
                progress.printf("round %d/%d, %s: cold %s, cancelled after %.0f ms%s, retry %s, %s of the prompt "
                                + "cached, ratio %s (bound %s), output %s%n", round, options.rounds(),
                        endpoint.name(), describe(r.cold()), r.cancelAfterNanos() / 1e6,
                        r.cancelledEarly() ? "" : " (after its first token: too late)", describe(r.retry()),
                        percent(r.cachedShare()), format(r.ratio()), format(r.bound()),
                        r.sameOutput() ? "the cold run's" : "DIFFERENT");
                Thread.sleep(options.pause());
            }
        }
        return rounds;
    }

    private Round round(Endpoint endpoint, int round, String prompt) throws InterruptedException {
        String base = "serve-" + run + "-" + endpoint.name() + "-r" + round;
        Leg cold = complete(endpoint, prompt, base + "-cold", base + "-cold");
        long cancelAfter = cold.completed() ? Math.round(cold.ttftNanos() * scenario.cancelAt()) : 0;
        boolean early = false;
        long disconnectedAfter = 0;
        if (cold.completed()) {
            Call call = endpoint.client().start(body(endpoint, prompt, base + "-retry"), base + "-cancelled");
            long sleep = cancelAfter - (System.nanoTime() - call.sentNanos());
            if (sleep > 0) {
                TimeUnit.NANOSECONDS.sleep(sleep);
            }
            early = call.textEvents() == 0;
            call.disconnect();
            disconnectedAfter = call.disconnectNanos() > 0 ? call.disconnectNanos() - call.sentNanos() : 0;
            await(call);
            Thread.sleep(options.pause());
        }
        Leg retry = cold.completed() ? complete(endpoint, prompt, base + "-retry", base + "-retry")
                : new Leg(false, 0, "", -1, -1, "not sent: the cold run failed");
        return new Round(endpoint.name(), round, cold, disconnectedAfter, early, retry);
    }

    private ObjectNode body(Endpoint endpoint, String prompt, String salt) {
        ObjectNode body = StreamingClient.completion(endpoint.model(), prompt, options.maxTokens(), true);
        body.put("cache_salt", salt);
        if (endpoint.usage()) {
            StreamingClient.withUsage(body);
        }
        return body;
    }

    private Leg complete(Endpoint endpoint, String prompt, String salt, String id) throws InterruptedException {
        Call call;
        try {
            call = endpoint.client().start(body(endpoint, prompt, salt), id);
        } catch (RuntimeException e) {
            return new Leg(false, 0, "", -1, -1, "client error: " + e.getClass().getSimpleName());
        }
        Outcome outcome;
        try {
            outcome = call.outcome().get(options.timeout().toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException tooLong) {
            call.disconnect();
            return new Leg(false, 0, "", -1, -1, "timeout");
        } catch (ExecutionException e) {
            return new Leg(false, 0, "", -1, -1, "client error: " + e.getCause().getClass().getSimpleName());
        }
        if (!outcome.completed()) {
            return new Leg(false, 0, outcome.text(), -1, -1, ServeBench.failure(outcome));
        }
        return new Leg(true, call.ttftNanos(), outcome.text(), call.promptTokens(), call.cachedTokens(), null);
    }

    private void await(Call call) throws InterruptedException {
        try {
            call.outcome().get(options.timeout().toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // the abandoned request's own end is not a figure
        }
    }

    /** A row per round and target, then per target: medians, how many retries kept their bound, same outputs. */
    void report(PrintStream out, List<Round> rounds) {
        out.println();
        out.printf("%-12s %5s %10s %12s %10s %10s %8s %8s %8s %s%n", "target", "round", "cold TTFT", "cancelled at",
                "retry TTFT", "cached", "ratio", "bound", "within", "output");
        for (Round r : rounds) {
            out.printf("%-12s %5d %10s %12s %10s %10s %8s %8s %8s %s%n", r.target(), r.round(), ms(r.cold()),
                    String.format("%.0f ms%s", r.cancelAfterNanos() / 1e6, r.cancelledEarly() ? "" : "*"),
                    ms(r.retry()), percent(r.cachedShare()), format(r.ratio()), format(r.bound()),
                    r.ratio() <= r.bound() ? "yes" : "no", r.sameOutput() ? "same" : "DIFFERENT");
        }
        out.println();
        for (ServeOptions.Target target : options.targets()) {
            List<Round> mine = rounds.stream().filter(r -> r.target().equals(target.name())).toList();
            long within = mine.stream().filter(r -> r.ratio() <= r.bound()).count();
            long same = mine.stream().filter(Round::sameOutput).count();
            long early = mine.stream().filter(Round::cancelledEarly).count();
            out.printf("%s: ratio median %s (bound median %s); within the bound %d of %d; the cold run's output %d "
                            + "of %d; cancelled before the first token %d of %d; cold runs served from a cache %d%n",
                    target.name(), format(median(mine.stream().mapToDouble(Round::ratio).toArray())),
                    format(median(mine.stream().mapToDouble(Round::bound).toArray())), within, mine.size(), same,
                    mine.size(), early, mine.size(), mine.stream().filter(r -> r.cold().cachedTokens() > 0).count());
        }
        if (rounds.stream().anyMatch(r -> !r.cancelledEarly())) {
            out.println("* the disconnect came after the first token: the prompt was already prefilled");
        }
    }

    /** {@link Stats#median} of the values that are not NaN (a round that failed has no ratio). */
    static double median(double[] values) {
        return Stats.median(java.util.Arrays.stream(values).filter(d -> !Double.isNaN(d)).toArray());
    }

    private static String describe(Leg leg) {
        return leg.completed() ? String.format("%.0f ms", leg.ttftNanos() / 1e6) : "failed (" + leg.failure() + ")";
    }

    private static String ms(Leg leg) {
        return leg.completed() ? String.format("%.0f ms", leg.ttftNanos() / 1e6) : "failed";
    }

    private static String percent(double share) {
        return Double.isNaN(share) ? "-" : String.format("%.1f %%", 100 * share);
    }

    private static String format(double value) {
        return Double.isNaN(value) ? "-" : String.format("%.2f", value);
    }
}
