package dev.ripcord.stack.cancel;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.stack.TestCredentials;

/**
 * A snapshot of a worker's scheduler journal ({@code GET /internal/v1/journal}), with the questions the cancellation
 * tests ask of it. Orderings are read from the gap-free {@code seq}, never from a clock.
 *
 * <p>Read {@link #mark} before a scenario and {@link #since} after it, so that what other tests did on a shared
 * stack is not in the picture.
 */
public final class Journal {

    private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    private final List<JournalEntry> entries;

    private Journal(List<JournalEntry> entries) {
        this.entries = List.copyOf(entries);
    }

    /**
     * The entries of {@code worker}'s journal after {@code after}.
     *
     * @throws AssertionError if the journal no longer holds all of them (it is a bounded ring)
     */
    public static Journal since(URI worker, long after) {
        JournalEntry[] read = read(worker, after);
        if (read.length > 0 && read[0].seq() != after + 1) {
            throw new AssertionError("%s journal no longer holds entry %d (oldest held: %d); raise "
                    .formatted(worker, after + 1, read[0].seq()) + "ripcord.worker.journal-size");
        }
        return new Journal(Arrays.asList(read));
    }

    /** The seq of {@code worker}'s latest journal entry: everything a later scenario does comes after it. */
    public static long mark(URI worker) {
        JournalEntry[] all = read(worker, 0);
        return all.length == 0 ? 0 : all[all.length - 1].seq();
    }

    private static JournalEntry[] read(URI worker, long after) {
        HttpRequest request = TestCredentials.withInternalToken(
                        HttpRequest.newBuilder(worker.resolve(InternalApi.JOURNAL + "?after=" + after)),
                        TestCredentials.internalToken(worker))
                .timeout(Duration.ofSeconds(30)).GET().build();
        try {
            HttpResponse<byte[]> response = HTTP.send(request, HttpResponse.BodyHandlers.ofByteArray());
            if (response.statusCode() != 200) {
                throw new AssertionError(worker + " journal answered " + response.statusCode());
            }
            return StreamingClient.JSON.readValue(response.body(), JournalEntry[].class);
        } catch (IOException e) {
            throw new UncheckedIOException("GET journal of " + worker + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    public List<JournalEntry> entries() {
        return entries;
    }

    /** This request's entries, in order. */
    public List<JournalEntry> of(String requestId) {
        return entries.stream().filter(e -> clientId(e.requestId()).equals(requestId)).toList();
    }

    /** This request's event names, in order (for readable assertion messages). */
    public List<String> events(String requestId) {
        return of(requestId).stream().map(e -> e.detail().isEmpty() ? e.event() : e.event() + "(" + e.detail() + ")")
                .toList();
    }

    public long count(String requestId, String event) {
        return of(requestId).stream().filter(e -> e.event().equals(event)).count();
    }

    public boolean has(String requestId, String event) {
        return count(requestId, event) > 0;
    }

    /** The seq of the first {@code event} of {@code requestId}, if any. */
    public OptionalLong first(String requestId, String event) {
        return of(requestId).stream().filter(e -> e.event().equals(event)).mapToLong(JournalEntry::seq).findFirst();
    }

    /** The seq of the first {@code event} of {@code requestId}; fails if there is none. */
    public long seq(String requestId, String event) {
        return first(requestId, event).orElseThrow(() -> new AssertionError(
                "no %s for %s in the journal; its events: %s".formatted(event, requestId, events(requestId))));
    }

    /**
     * Prompt tokens of {@code requestId} that prefill took from its prefix cache: the {@code C cached} of its
     * {@code STARTED} entry's detail ({@code "N tokens, C cached"}); fails if it has no such entry.
     */
    public int cachedTokens(String requestId) {
        JournalEntry entry = of(requestId).stream().filter(e -> e.event().equals("STARTED")).findFirst()
                .orElseThrow(() -> new AssertionError("no STARTED for %s in the journal; its events: %s"
                        .formatted(requestId, events(requestId))));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+) cached").matcher(entry.detail());
        if (!m.find()) {
            throw new AssertionError("STARTED of %s does not say how many tokens were cached: %s"
                    .formatted(requestId, entry));
        }
        return Integer.parseInt(m.group(1));
    }

    /**
     * Decode's step number on the first {@code event} of {@code requestId}: {@code CANCEL_OBSERVED} says the last
     * step started when the cancel was observed, {@code STOPPED} the step the sequence did not take part in (the
     * {@code step=N} of the entry's detail).
     */
    public long step(String requestId, String event) {
        JournalEntry entry = of(requestId).stream().filter(e -> e.event().equals(event)).findFirst()
                .orElseThrow(() -> new AssertionError("no %s for %s in the journal; its events: %s".formatted(event,
                        requestId, events(requestId))));
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("step=(\\d+)").matcher(entry.detail());
        if (!m.find()) {
            throw new AssertionError("%s of %s carries no step number: %s".formatted(event, requestId, entry));
        }
        return Long.parseLong(m.group(1));
    }

    /**
     * Where the first {@code event} of {@code requestId} says a forward stopped or was found: the {@code layer=B/L}
     * of its detail as {@code {B, L}}, or empty when it carries none (prefill's {@code STOPPED} between chunks,
     * {@code CANCEL_OBSERVED} when no chunk of the request was computing).
     */
    public java.util.Optional<int[]> layer(String requestId, String event) {
        return of(requestId).stream().filter(e -> e.event().equals(event)).findFirst().flatMap(e -> {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("layer=(\\d+)/(\\d+)").matcher(e.detail());
            return m.find() ? java.util.Optional.of(new int[] {Integer.parseInt(m.group(1)),
                    Integer.parseInt(m.group(2))}) : java.util.Optional.empty();
        });
    }

    /** The {@code chunk=C} of the first {@code event} of {@code requestId}'s detail, or -1 when it carries none. */
    public int chunk(String requestId, String event) {
        return of(requestId).stream().filter(e -> e.event().equals(event)).findFirst().map(e -> {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("chunk=(\\d+)").matcher(e.detail());
            return m.find() ? Integer.parseInt(m.group(1)) : -1;
        }).orElse(-1);
    }

    /** {@code CHUNK} entries of {@code requestId} with a seq greater than {@code after}. */
    public long chunksAfter(String requestId, long after) {
        return of(requestId).stream().filter(e -> e.event().equals("CHUNK") && e.seq() > after).count();
    }

    /**
     * The ID a test sent, for an ID a worker knows a request by: the gateway's internal ID
     * ({@code CLIENT:<22 random>}, and {@code .i} for choice {@code i}) without its random part, so tests ask about
     * requests by the IDs they sent ({@code CLIENT}, {@code CLIENT.i}). An ID sent to a worker directly is itself.
     */
    public static String clientId(String workerId) {
        return INTERNAL_PART.matcher(workerId).replaceFirst("");
    }

    private static final java.util.regex.Pattern INTERNAL_PART =
            java.util.regex.Pattern.compile(":[A-Za-z0-9]{22}(?=(\\.[0-9]+)?$)");

    /** Distinct request IDs (as the tests sent them: {@link #clientId}) with an entry matching {@code event}. */
    public Set<String> idsWith(Predicate<String> event) {
        return entries.stream().filter(e -> event.test(e.event())).map(e -> clientId(e.requestId()))
                .collect(Collectors.toCollection(LinkedHashSet::new));
    }

    /** For each request ID, how many of its entries match {@code event}; only IDs with at least one. */
    public Map<String, Long> countsBy(Predicate<String> event) {
        return entries.stream().filter(e -> event.test(e.event()))
                .collect(Collectors.groupingBy(e -> clientId(e.requestId()), LinkedHashMap::new,
                        Collectors.counting()));
    }

    @Override
    public String toString() {
        return entries.stream().map(e -> e.seq() + " " + e.requestId() + " " + e.event() + " " + e.detail())
                .collect(Collectors.joining("\n"));
    }
}
