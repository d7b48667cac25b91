package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import dev.ripcord.kv.session.FenceSlots;
import dev.ripcord.kv.session.LiveResources;
import dev.ripcord.kv.testing.KvLeakCheck;
import dev.ripcord.kv.transport.shm.ShmMappings;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Leaks are tracked by identity, not by counters: a double release followed by a missing one (which a counter reads
 * as balanced) is caught at the double release, recorded with its stack, and the holder that did not let go still
 * holds. Each test plants one and takes its record back.
 */
@ExtendWith(KvLeakCheck.class)
class DoubleReleaseTest extends AgentsPerTest {
    static final int PAGE = 4096;

    @Test
    void aStaleFenceSlotFreeIsCaughtAndCannotTakeTheSlotFromItsNextSession() {
        FenceSlots slots = new FenceSlots(2);
        int slot = slots.allocate();
        long first = slots.generation(slot);
        slots.free(slot, first);
        assertThat(slots.allocate()).as("recycled for the next session").isEqualTo(slot);
        long second = slots.generation(slot);

        slots.free(slot, first); // planted: the first session frees again (its free is doubled)

        assertThat(LiveResources.takeViolations("fence slot " + slot + " (allocation " + first)).hasSize(1);
        assertThat(slots.allocate()).as("the slot still belongs to the next session").isNotEqualTo(slot);
        assertThatIllegalStateException().isThrownBy(slots::inUse).withMessageContaining("freed twice");
        slots.free(slot, second);
    }

    @Test
    void aRegionHolderLettingGoTwiceIsCaughtWhileAnotherStillHolds() throws Exception {
        TransferAgent agent = agent(TransferAgentOptions.defaults("regions").withBackend(Backend.TCP));
        KvRegion region = agent.allocateRegion(PAGE);
        Object a = "holder a";
        Object b = "holder b";
        assertThat(Internals.region(region).retain(a)).isTrue();
        assertThat(Internals.region(region).retain(b)).isTrue();
        Internals.region(region).unretain(a);

        assertThatIllegalStateException().isThrownBy(() -> Internals.region(region).unretain(a)).withMessageContaining("twice");

        assertThat(LiveResources.takeViolations("holder a")).hasSize(1);
        region.close();
        assertThat(Internals.region(region).references()).as("b still holds it").isEqualTo(1);
        assertThat(region.released()).as("not freed under b").isNotDone();
        Internals.region(region).unretain(b);
        get(region.released());
    }

    @Test
    void aSharedMemoryMappingReleasedTwiceIsCaught() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM));
        KvRegion pool = decode.allocateRegion(4 * PAGE);
        ReceiveSession rx = decode.openReceive("req-map", pool, List.of(new ByteRange(0, PAGE)));
        ShmMappings mappings = new ShmMappings(Path.of(rx.descriptor().shmFenceFile()).getParent());
        ShmMappings.Target target = mappings.acquire(rx.descriptor());
        target.release().run();

        assertThatIllegalStateException().isThrownBy(() -> target.release().run());

        assertThat(LiveResources.takeViolations("req-map")).hasSize(1);
        mappings.closeAll();
        rx.abort("done");
        get(rx.released());
        pool.close();
    }
}
