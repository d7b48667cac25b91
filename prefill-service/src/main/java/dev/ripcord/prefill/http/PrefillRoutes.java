package dev.ripcord.prefill.http;

import dev.ripcord.cancel.DuplicateRegistrationException;
import dev.ripcord.prefill.PrefillProperties;
import dev.ripcord.prefill.scheduler.PrefillJob;
import dev.ripcord.prefill.scheduler.PrefillScheduler;
import dev.ripcord.protocol.InternalApi;
import dev.ripcord.protocol.Pairing;
import dev.ripcord.protocol.PrefillEvent;
import dev.ripcord.protocol.PrefillRequest;
import dev.ripcord.protocol.RequestIds;
import dev.ripcord.worker.WorkerContext;
import dev.ripcord.worker.http.WorkerEndpoint;
import dev.ripcord.worker.http.WorkerRoutes;
import org.springframework.stereotype.Component;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * The prefill worker's own route, {@code POST /internal/v1/prefill}: the response is the job's event stream. The
 * routes every worker has are {@link WorkerRoutes}'.
 */
@Component
public final class PrefillRoutes extends WorkerEndpoint<PrefillRequest> {

    private final PrefillScheduler scheduler;
    private final int vocabulary;
    private final Pairing pairing;

    PrefillRoutes(PrefillScheduler scheduler, PrefillProperties properties, WorkerContext context) {
        super("prefill", InternalApi.PREFILL, properties.retryAfter(), scheduler, PrefillRequest.class);
        this.scheduler = scheduler;
        this.vocabulary = context.engine().config().vocabSize();
        this.pairing = context.pairing();
    }

    @Override
    protected Mono<ServerResponse> accept(PrefillRequest body, WorkerRoutes routes) {
        if (body.pairing() != null) {
            String mismatch = pairing.mismatch(body.pairing());
            if (mismatch != null) {
                // Nothing registered, nothing computed: the KV this worker would compute is not the KV the decode
                // worker would read.
                return routes.pairingMismatch(body.requestId(), "prefill", mismatch);
            }
        }
        PrefillJob job;
        try {
            job = scheduler.submit(body);
        } catch (PrefillScheduler.QueueFullException e) {
            return routes.busy(body.requestId(), e.getMessage(), e.retryAfter());
        } catch (DuplicateRegistrationException e) {
            return routes.duplicate(body.requestId(), e);
        } catch (IllegalArgumentException e) {
            return routes.badRequest(e.getMessage());
        }
        return routes.stream(job.requestId(), job.events(), PrefillEvent.class);
    }

    @Override
    protected String invalid(PrefillRequest body) {
        if (!RequestIds.isValid(body.requestId()) || body.tokens() == null || body.tokens().length == 0
                || body.transfer() == null || body.sampling() == null) {
            return "requestId, tokens, sampling and transfer are required";
        }
        for (int token : body.tokens()) {
            if (token < 0 || token >= vocabulary) {
                return "token ids must be in 0.." + (vocabulary - 1) + ", got " + token;
            }
        }
        return validSampling(body.sampling()) ? null
                : "sampling needs a finite temperature >= 0 and a top_p in (0, 1]";
    }
}
