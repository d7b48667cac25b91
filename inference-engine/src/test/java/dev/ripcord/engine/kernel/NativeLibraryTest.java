package dev.ripcord.engine.kernel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loading the native library from the engine's jar: only into a directory private to this user, only bytes whose
 * SHA-256 is the one the build recorded, never a file or directory a stranger could have written.
 */
class NativeLibraryTest {
    @TempDir
    Path tmp;

    static NativeLibrary.Packaged packaged() throws Exception {
        NativeLibrary.Packaged lib = NativeLibrary.packaged();
        assumeTrue(lib != null, "this build has no native library");
        return lib;
    }

    @Test
    void theBuildRecordsTheLibrarysDigestAndExtractionWritesItPrivately() throws Exception {
        NativeLibrary.Packaged lib = packaged();
        assertThat(NativeLibrary.sha256(lib.bytes())).isEqualTo(lib.sha256());
        Path dir = tmp.resolve("cache").resolve("native");
        Path file = NativeLibrary.extract(lib, dir);
        assertThat(file.getParent()).isEqualTo(dir);
        assertThat(file.getFileName().toString()).contains(lib.sha256().substring(0, 16));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(dir))).isEqualTo("rwx------");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("r-x------");
        assertThat(NativeLibrary.sha256(Files.readAllBytes(file))).isEqualTo(lib.sha256());
        assertThat(NativeLibrary.extract(lib, dir)).isEqualTo(file);
        try (var files = Files.list(dir)) {
            assertThat(files.count()).isEqualTo(1);
        }
        // and it loads: the symbols the kernels bind are there
        assertThat(NativeLibrary.load(file).find("ripcord_matvec")).isPresent();
    }

    @Test
    void aTamperedFileInThePrivateDirectoryIsReplacedNotLoaded() throws Exception {
        NativeLibrary.Packaged lib = packaged();
        Path dir = tmp.resolve("native");
        Path file = NativeLibrary.extract(lib, dir);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
        Files.write(file, new byte[] {1, 2, 3});
        assertThat(NativeLibrary.extract(lib, dir)).isEqualTo(file);
        assertThat(NativeLibrary.sha256(Files.readAllBytes(file))).isEqualTo(lib.sha256());
    }

    @Test
    void aDirectoryOthersCanWriteOrALinkIsRefused() throws Exception {
        NativeLibrary.Packaged lib = packaged();
        Path open = Files.createDirectory(tmp.resolve("open"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxrwxrwx")));
        Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwxrwx"));
        assertThatThrownBy(() -> NativeLibrary.extract(lib, open)).isInstanceOf(SecurityException.class)
                .hasMessageContaining("rwxrwxrwx");
        Path real = Files.createDirectory(tmp.resolve("real"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path link = Files.createSymbolicLink(tmp.resolve("link"), real);
        assertThatThrownBy(() -> NativeLibrary.extract(lib, link)).isInstanceOf(SecurityException.class);
        try (var files = Files.list(real)) {
            assertThat(files.count()).isZero();
        }
    }

    @Test
    void bytesThatDoNotMatchTheRecordedDigestAreRefused() throws Exception {
        NativeLibrary.Packaged lib = packaged();
        byte[] altered = lib.bytes().clone();
        altered[altered.length / 2] ^= 1;
        Path dir = tmp.resolve("native");
        assertThatThrownBy(() -> NativeLibrary.extract(new NativeLibrary.Packaged(altered, lib.sha256()), dir))
                .isInstanceOf(SecurityException.class).hasMessageContaining(lib.sha256());
        assertThat(dir).doesNotExist();
    }
}
