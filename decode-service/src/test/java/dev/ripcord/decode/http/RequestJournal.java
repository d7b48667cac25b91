package dev.ripcord.decode.http;

import java.util.List;

import dev.ripcord.protocol.JournalEntry;
import dev.ripcord.worker.WorkerContext;

/**
 * One request's entries in the shared decode worker's journal ({@link DecodeWorkerTest}). Each test gives its
 * requests IDs of their own, so a request's entries are all the journal holds about it.
 */
final class RequestJournal {

    private RequestJournal() {
    }

    static List<JournalEntry> entries(WorkerContext context, String requestId) {
        return context.journal().since(0).stream().filter(e -> e.requestId().equals(requestId)).toList();
    }
}
