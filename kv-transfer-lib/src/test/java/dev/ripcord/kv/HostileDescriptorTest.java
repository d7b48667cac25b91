package dev.ripcord.kv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.ripcord.kv.shm.RefusedShmFileException;
import dev.ripcord.kv.shm.SharedRegionFile;
import dev.ripcord.kv.testing.KvLeakCheck;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A descriptor reaches prefill from the control plane: whoever can forge one must not make the sender map, read or
 * write any file but a receiver region in the shared-memory directory, nor map past the end of one.
 */
@ExtendWith(KvLeakCheck.class)
class HostileDescriptorTest extends AgentsPerTest {
    static final int PAGE = 4096;
    static final long FORGED_REGION = 999;

    @TempDir
    Path shm;
    @TempDir
    Path elsewhere;

    enum Hostile {
        /** A region file, valid in every other way, in another directory (an absolute path elsewhere). */
        OUTSIDE_THE_DIRECTORY("not in the shared-memory directory"),
        /** The same file reached from the directory through {@code ..}. */
        DOT_DOT("the path has . or .. in it"),
        /** A link in the directory, with a region file's name, to that file. */
        SYMLINK_TO_A_FILE_OUTSIDE("a symbolic link"),
        /** A region file in the directory whose header claims nearly 2^63 data bytes ({@code 4096 + bytes} wraps). */
        SIZE_NEAR_LONG_MAX("its header claims 9223372036854775707 data bytes"),
        /** The same with a negative size. */
        NEGATIVE_SIZE("its header claims -4096 data bytes");

        final String why;

        Hostile(String why) {
            this.why = why;
        }
    }

    @ParameterizedTest
    @EnumSource(Hostile.class)
    void aHostileDescriptorIsRefusedWithATypedErrorAndMapsNothing(Hostile hostile) throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM)
                .withShmDirectory(shm));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(Backend.SHM)
                .withShmDirectory(shm));
        KvRegion pool = decode.allocateRegion(8 * PAGE);
        ReceiveSession rx = decode.openReceive("req-hostile", pool, List.of(new ByteRange(0, 4 * PAGE)));
        ReceiveDescriptor d = rx.descriptor();
        String regionName = Path.of(d.shmRegionFile()).getFileName().toString().replace("-r" + d.regionId() + ".",
                "-r" + FORGED_REGION + ".");
        Path outside = elsewhere.resolve(regionName);
        String named = switch (hostile) {
            case OUTSIDE_THE_DIRECTORY -> validRegion(outside, d).toString();
            case DOT_DOT -> shm.resolve("..").resolve(elsewhere.getFileName())
                    .resolve(validRegion(outside, d).getFileName()).toString();
            case SYMLINK_TO_A_FILE_OUTSIDE -> Files.createSymbolicLink(shm.resolve(regionName),
                    validRegion(outside, d)).toString();
            case SIZE_NEAR_LONG_MAX -> withClaimedSize(validRegion(shm.resolve(regionName), d),
                    Long.MAX_VALUE - 100).toString();
            case NEGATIVE_SIZE -> withClaimedSize(validRegion(shm.resolve(regionName), d), -PAGE).toString();
        };
        ReceiveDescriptor forged = new ReceiveDescriptor(d.requestId(), d.agentName(), d.agentIncarnation(),
                d.tcpHost(), d.tcpPort(), d.shmHost(), named, d.shmFenceFile(), d.fenceSlot(), d.epoch(),
                d.sessionId(), d.attachToken(), FORGED_REGION, d.targets(), d.totalBytes());

        assertThatThrownBy(() -> prefill.connect(forged))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cannot map the receiver's shared memory")
                .cause().isInstanceOf(RefusedShmFileException.class)
                .hasMessageContaining("refused: " + hostile.why);
        assertThat(Internals.agent(prefill).sharedFilesMapped()).as("files the sender mapped").isZero();
        assertThat(prefill.stats().liveSessions()).isZero();
        rx.abort("test over");
    }

    @Test
    void theSameDescriptorUnforgedIsMappedSoTheRefusalsAreAboutThePath() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM)
                .withShmDirectory(shm));
        TransferAgent prefill = agent(TransferAgentOptions.defaults("prefill").withBackend(Backend.SHM)
                .withShmDirectory(shm));
        KvRegion pool = decode.allocateRegion(8 * PAGE);
        ReceiveSession rx = decode.openReceive("req-honest", pool, List.of(new ByteRange(0, 4 * PAGE)));
        SendSession tx = prefill.connect(rx.descriptor());
        assertThat(tx.backend()).isEqualTo(Backend.SHM);
        assertThat(Internals.agent(prefill).sharedFilesMapped()).isEqualTo(2);
        tx.abort("test over");
        get(rx.released());
    }

    @Test
    void regionAndFenceFilesAreOwnerOnlyFromTheStart() throws Exception {
        TransferAgent decode = agent(TransferAgentOptions.defaults("decode").withBackend(Backend.SHM)
                .withShmDirectory(shm));
        KvRegion pool = decode.allocateRegion(2 * PAGE);
        ReceiveDescriptor d = decode.openReceive("req-mode", pool, List.of(new ByteRange(0, PAGE))).descriptor();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(Path.of(d.shmRegionFile()))))
                .isEqualTo("rw-------");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(Path.of(d.shmFenceFile()))))
                .isEqualTo("rw-------");
    }

    /** A region file at {@code path} with the receiver's incarnation and the forged region id: valid but for where. */
    private static Path validRegion(Path path, ReceiveDescriptor d) throws Exception {
        Path made = path.resolveSibling("made-" + path.getFileName());
        try (SharedRegionFile f = SharedRegionFile.create(made, d.agentIncarnation(), FORGED_REGION, 8 * PAGE)) {
            Files.copy(made, path); // the owner deletes its file on close: keep a copy
        }
        return path;
    }

    private static Path withClaimedSize(Path region, long bytes) throws Exception {
        try (FileChannel ch = FileChannel.open(region, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(8).order(ByteOrder.nativeOrder()).putLong(0, bytes), 24);
        }
        return region;
    }
}
