package dev.ripcord.kv;

import static dev.ripcord.kv.SessionState.ABORTED;
import static dev.ripcord.kv.SessionState.ABORTING;
import static dev.ripcord.kv.SessionState.COMPLETED;
import static dev.ripcord.kv.SessionState.COMPLETING;
import static dev.ripcord.kv.SessionState.OPEN;
import static dev.ripcord.kv.SessionState.RELEASED;
import static dev.ripcord.kv.SessionState.TRANSFERRING;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SessionStateTest {
    /** The table in SessionState's javadoc, restated independently. */
    static final Map<SessionState, Set<SessionState>> TABLE = Map.of(
            OPEN, EnumSet.of(TRANSFERRING, COMPLETING, ABORTING),
            TRANSFERRING, EnumSet.of(COMPLETING, COMPLETED, ABORTING),
            COMPLETING, EnumSet.of(COMPLETED, ABORTING),
            COMPLETED, EnumSet.of(RELEASED),
            ABORTING, EnumSet.of(ABORTED),
            ABORTED, EnumSet.of(RELEASED),
            RELEASED, EnumSet.noneOf(SessionState.class));

    @Test
    void onlyTheDocumentedTransitionsAreAccepted() {
        for (SessionState from : SessionState.values()) {
            for (SessionState to : SessionState.values()) {
                boolean legal = TABLE.get(from).contains(to);
                assertThat(from.canTransitionTo(to)).as("%s -> %s", from, to).isEqualTo(legal);
                if (legal) {
                    assertThat(from.transitionTo(to)).isEqualTo(to);
                } else {
                    assertThatThrownBy(() -> from.transitionTo(to)).isInstanceOf(IllegalStateException.class)
                            .hasMessageContaining(from + " -> " + to);
                }
            }
        }
    }

    @Test
    void releasedIsReachedOnlyThroughATerminalState() {
        for (SessionState s : SessionState.values()) {
            assertThat(s.canTransitionTo(RELEASED)).isEqualTo(s == COMPLETED || s == ABORTED);
        }
        assertThat(EnumSet.allOf(SessionState.class).stream().filter(SessionState::isAbortable))
                .containsExactlyInAnyOrder(OPEN, TRANSFERRING, COMPLETING);
    }
}
