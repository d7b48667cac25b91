package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.ripcord.kv.session.LiveResources;
import dev.ripcord.kv.testing.KvLeakCheck;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Nothing that throws on the way from a verdict to RELEASED strands a session: a session listener that throws
 * (it is called under the session's lock), or a release step that throws, is logged and the session still fences,
 * drains and releases, exactly once.
 */
@ExtendWith(KvLeakCheck.class)
class StrandedSessionTest extends AgentsPerTest {
    static final int PAGE = 4096;

    @ParameterizedTest
    @EnumSource(value = SessionState.class, names = {"ABORTING", "ABORTED", "RELEASED"})
    void receiverListenerThrowingOnAStateStillReleases(SessionState poisoned) throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM));
        List<SessionState> seen = new CopyOnWriteArrayList<>();
        decode.onSession((requestId, side, state, bytes) -> {
            seen.add(state);
            if (state == poisoned) {
                throw new IllegalStateException("listener bug on " + state);
            }
        });
        KvRegion pool = decode.allocateRegion(4 * PAGE);
        ReceiveSession rx = decode.openReceive("req-listener", pool, List.of(new ByteRange(0, 4 * PAGE)));

        assertThat(rx.abort("client went away")).isTrue();

        assertThat(rx.completion()).isCompletedExceptionally();
        assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(rx.state()).isEqualTo(SessionState.RELEASED);
        assertThat(seen).containsExactly(SessionState.OPEN, SessionState.ABORTING, SessionState.ABORTED,
                SessionState.RELEASED);
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
        assertThat(decode.stats().liveSessions()).isZero();
        pool.close();
    }

    @Test
    void listenersThrowingOnEveryStateStillCompleteATransfer() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(Backend.SHM));
        SessionListener bug = (requestId, side, state, bytes) -> {
            throw new IllegalStateException("listener bug on " + side + " " + state);
        };
        decode.onSession(bug);
        prefill.onSession(bug);
        KvRegion pool = decode.allocateRegion(4 * PAGE);
        KvRegion src = prefill.allocateRegion(4 * PAGE);
        ReceiveSession rx = decode.openReceive("req-listener", pool, List.of(new ByteRange(0, 4 * PAGE)));
        SendSession tx = prefill.connect(rx.descriptor());
        tx.send(src, 0, 4 * PAGE, 0);
        tx.complete(new byte[] {7});

        assertThat(get(rx.completion())).containsExactly(7);
        assertThat(get(rx.released())).isEqualTo(SessionState.COMPLETED);
        assertThat(get(tx.released())).isEqualTo(SessionState.COMPLETED);
        assertThat(decode.stats().liveSessions()).isZero();
        assertThat(prefill.stats().liveSessions()).isZero();
        pool.close();
        src.close();
    }

    @Test
    void releaseStepThatThrowsStillCompletesReleased() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM));
        KvRegion pool = decode.allocateRegion(4 * PAGE);
        ReceiveSession rx = decode.openReceive("req-release", pool, List.of(new ByteRange(0, 4 * PAGE)));
        Internals.region(pool).unretain(Internals.receive(rx).targets()); // planted: the session's region hold let go early, so its own let-go throws

        assertThat(rx.abort("client went away")).isTrue();

        assertThat(get(rx.released())).isEqualTo(SessionState.ABORTED);
        assertThat(LiveResources.takeViolations("region " + pool.id() + "'s reference by " + Internals.receive(rx).targets()))
                .as("caught at the session's own let-go, the second").hasSize(1);
        assertThat(rx.state()).isEqualTo(SessionState.RELEASED);
        assertThat(Internals.agent(decode).fenceSlotsInUse()).isZero();
        assertThat(decode.stats().liveSessions()).isZero();
        pool.close();
        get(pool.released());
    }
}
