package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.ripcord.model.ModelStore;

/** The share of the host each service of a co-located stack gets. */
class HostBudgetTest {

    private static final Path ROOT = Path.of(".");
    private static final long GIB = 1L << 30;
    /** A two-core machine with 8 GiB, like CI's: the budget's smallest case. */
    private static final HostBudget.Host SMALL = new HostBudget.Host(2, 8 * GIB);

    @Test
    void workersSplitTheProcessorsEvenlyAndNeverTogetherExceedThem() {
        assertThat(HostBudget.engineThreads(2, 2)).isEqualTo(1);
        assertThat(HostBudget.engineThreads(16, 2)).isEqualTo(8);
        assertThat(HostBudget.engineThreads(16, 3)).isEqualTo(5);
        for (int processors = 2; processors <= 64; processors++) {
            for (int workers = 2; workers <= processors; workers++) {
                assertThat(HostBudget.engineThreads(processors, workers) * workers).isLessThanOrEqualTo(processors);
            }
        }
    }

    @Test
    void everyWorkerGetsAThreadEvenWhenThereAreMoreWorkersThanProcessors() {
        assertThat(HostBudget.engineThreads(2, 4)).isEqualTo(1);
        assertThat(HostBudget.engineThreads(1, 2)).isEqualTo(1);
        assertThatThrownBy(() -> HostBudget.engineThreads(0, 2)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theDefaultStackGivesEachOfItsTwoWorkersHalfTheHostAndTheGatewayNoEngineThreads() {
        StackOptions options = StackOptions.parse(new String[0], ROOT);
        assertThat(HostBudget.workerArguments(Role.PREFILL, options, 2)).containsExactly("--ripcord.engine.threads=1");
        assertThat(HostBudget.workerArguments(Role.DECODE, options, 8)).containsExactly("--ripcord.engine.threads=4",
                "--ripcord.decode.max-batch=32");
        assertThat(HostBudget.workerArguments(Role.GATEWAY, options, 8)).isEmpty();
    }

    @Test
    void decodeBatchesSixteenSequencesPerComputeThreadUpToTheEnginesLargestBatch() {
        StackOptions options = StackOptions.parse(new String[0], ROOT);
        assertThat(HostBudget.workerArguments(Role.DECODE, options, 2)).containsExactly("--ripcord.engine.threads=1",
                "--ripcord.decode.max-batch=16");
        assertThat(HostBudget.workerArguments(Role.DECODE, options, 64)).containsExactly(
                "--ripcord.engine.threads=32", "--ripcord.decode.max-batch=32");
        StackOptions bigger = StackOptions.parse(new String[] {"--ripcord.engine.max-batch=64"}, ROOT);
        assertThat(HostBudget.workerArguments(Role.DECODE, bigger, 16)).containsExactly("--ripcord.engine.threads=8",
                "--ripcord.decode.max-batch=64");
    }

    @Test
    void aDecodeBatchGivenOnTheCommandLineWinsAndGivenThreadsSizeTheDefaultOne() {
        StackOptions batch = StackOptions.parse(new String[] {"--ripcord.decode.max-batch=24"}, ROOT);
        assertThat(HostBudget.workerArguments(Role.DECODE, batch, 2)).containsExactly("--ripcord.engine.threads=1");
        StackOptions threads = StackOptions.parse(new String[] {"--ripcord.engine.threads=1"}, ROOT);
        assertThat(HostBudget.workerArguments(Role.DECODE, threads, 8)).containsExactly(
                "--ripcord.decode.max-batch=16");
        assertThat(HostBudget.workerArguments(Role.PREFILL, threads, 8)).isEmpty();
    }

    @Test
    void theWorkersShareOneWeightCacheUnderTheModelCacheUnlessTheCommandLineNamesOne() {
        StackOptions options = StackOptions.parse(new String[0], ROOT);
        String shared = "--ripcord.engine.weight-cache=" + ModelStore.cacheDir().resolve("weights");
        assertThat(HostBudget.weightCacheArguments(Role.PREFILL, options)).containsExactly(shared);
        assertThat(HostBudget.weightCacheArguments(Role.DECODE, options)).containsExactly(shared);
        assertThat(HostBudget.weightCacheArguments(Role.GATEWAY, options)).isEmpty();
        StackOptions given = StackOptions.parse(new String[] {"--ripcord.engine.weight-cache=/elsewhere"}, ROOT);
        assertThat(HostBudget.weightCacheArguments(Role.DECODE, given)).isEmpty();
    }

    @Test
    void instancesCountAsWorkersOfTheirOwn() {
        StackOptions options = StackOptions.parse(new String[] {"--prefills=2", "--decodes=2"}, ROOT);
        assertThat(HostBudget.workerArguments(Role.DECODE, options, 8)).containsExactly("--ripcord.engine.threads=2",
                "--ripcord.decode.max-batch=32");
    }

    @Test
    void threadsGivenOnTheCommandLineWin() {
        StackOptions options = StackOptions.parse(new String[] {"--ripcord.engine.threads=3"}, ROOT);
        assertThat(HostBudget.workerArguments(Role.PREFILL, options, 2)).isEmpty();
    }

    @Test
    void theUsersJvmFlagsComeAfterTheBudgetsSoTheyWin() {
        // HotSpot takes the last occurrence of a flag.
        StackOptions options = StackOptions.parse(new String[] {"--jvm-flag=-Xmx1g"}, ROOT);
        var flags = LocalStack.serviceJvmFlags(options, Role.DECODE, SMALL);
        assertThat(flags).contains("-XX:+UseSerialGC", "-Xmx" + HostBudget.HEAP_MAX);
        assertThat(flags.lastIndexOf("-Xmx1g")).isGreaterThan(flags.indexOf("-Xmx" + HostBudget.HEAP_MAX));
    }

    @Test
    void theGatewayGetsTheClientCompilerOnlyAndWorkersKeepC2ForTheEngineAlone(@TempDir Path checkout)
            throws IOException {
        Path directives = checkout.resolve(HostBudget.ENGINE_C2_DIRECTIVES);
        Files.createDirectories(directives.getParent());
        Files.writeString(directives, "[]");
        StackOptions options = StackOptions.parse(new String[0], checkout);
        assertThat(HostBudget.jitFlags(Role.GATEWAY, options, SMALL))
                .containsExactly("-XX:TieredStopAtLevel=1", HostBudget.COMPILE_SOONER);
        for (Role worker : List.of(Role.PREFILL, Role.DECODE)) {
            assertThat(HostBudget.jitFlags(worker, options, SMALL)).startsWith("-XX:+UnlockDiagnosticVMOptions",
                            "-XX:CompilerDirectivesFile=" + directives.toAbsolutePath().normalize())
                    .containsSubsequence(HostBudget.EARLY_C2_TIER).contains(HostBudget.WORKER_CODE_CACHE)
                    .endsWith(HostBudget.COMPILE_SOONER);
        }
    }

    @Test
    void workersOnTheScalarKernelsGetTheClientCompilerOnly(@TempDir Path checkout) {
        StackOptions options = StackOptions.parse(new String[] {"--ripcord.engine.kernels=scalar"}, checkout);
        assertThat(HostBudget.jitFlags(Role.DECODE, options, SMALL))
                .containsExactly("-XX:TieredStopAtLevel=1", HostBudget.COMPILE_SOONER);
    }

    @Test
    void withoutTheDirectiveFileWorkersKeepTheWholeTieredJit(@TempDir Path notACheckout) {
        StackOptions options = StackOptions.parse(new String[0], notACheckout);
        assertThat(HostBudget.jitFlags(Role.PREFILL, options, SMALL)).containsExactly(HostBudget.COMPILE_SOONER);
    }

    @Test
    void theCheckoutsDirectiveKeepsC2ForTheEnginesPackageOnly() throws IOException {
        Path repository = Path.of("").toAbsolutePath();
        while (!Files.isRegularFile(repository.resolve(HostBudget.ENGINE_C2_DIRECTIVES))) {
            repository = repository.getParent();
            assertThat(repository).as("a checkout above the module").isNotNull();
        }
        String directive = Files.readString(repository.resolve(HostBudget.ENGINE_C2_DIRECTIVES));
        assertThat(directive).containsSubsequence("dev/ripcord/engine/*.*", "Exclude: false", "*.*", "Exclude: true");
    }

    @Test
    void theUsersJitFlagsComeAfterTheBudgetsSoTheyWin() {
        StackOptions options = StackOptions.parse(new String[] {"--jvm-flag=-XX:TieredStopAtLevel=4"}, ROOT);
        var flags = LocalStack.serviceJvmFlags(options, Role.GATEWAY, SMALL);
        assertThat(flags.lastIndexOf("-XX:TieredStopAtLevel=4"))
                .isGreaterThan(flags.indexOf("-XX:TieredStopAtLevel=1"));
    }

    @Test
    void aTestStackKeepsTheUsualThresholdsAndABenchStackGetsUpsOnes(@TempDir Path logs) {
        StackOptions test = TestStacks.options(Map.of(), logs);
        for (Role role : Role.values()) {
            List<String> flags = LocalStack.serviceJvmFlags(test, role);
            assertThat(flags.lastIndexOf("-XX:CompileThresholdScaling=1"))
                    .isGreaterThan(flags.indexOf(HostBudget.COMPILE_SOONER));
            assertThat(flags.getLast()).isEqualTo(TestStacks.USUAL_THRESHOLDS.getLast());
            List<String> bench = LocalStack.serviceJvmFlags(TestStacks.asUp(test), role);
            assertThat(bench.subList(bench.size() - HostBudget.EARLY_C2_TIER.size() - 1, bench.size()))
                    .containsExactlyElementsOf(TestStacks.UP_THRESHOLDS)
                    .containsSubsequence(HostBudget.EARLY_C2_TIER).endsWith(HostBudget.COMPILE_SOONER);
        }
    }

    // --- the budget follows the host --------------------------------------------------------------------------

    /**
     * Threads, heaps and JIT choices for 2, 4 and 16 processors with little and much memory: the workers split the
     * processors (more threads on more cores, decode's batch following), the heap ceiling follows the memory, and
     * the gateway keeps C2 from {@value HostBudget#GATEWAY_C2_PROCESSORS} processors on.
     */
    @Test
    void theBudgetFollowsTheHostsProcessorsAndMemory(@TempDir Path checkout) throws IOException {
        Path directives = checkout.resolve(HostBudget.ENGINE_C2_DIRECTIVES);
        Files.createDirectories(directives.getParent());
        Files.writeString(directives, "[]");
        StackOptions options = StackOptions.parse(new String[0], checkout);
        record Expected(int threads, int batch, boolean gatewayC2) {
        }
        Map<Integer, Expected> byProcessors = Map.of(
                2, new Expected(1, 16, false),
                4, new Expected(2, 32, false),
                16, new Expected(8, 32, true));
        for (var e : byProcessors.entrySet()) {
            for (long memory : new long[] {4 * GIB, 64 * GIB}) {
                HostBudget.Host host = new HostBudget.Host(e.getKey(), memory);
                Expected x = e.getValue();
                String id = e.getKey() + " processors, " + memory / GIB + " GiB";
                assertThat(HostBudget.workerArguments(Role.DECODE, options, host.processors())).as(id)
                        .containsExactly("--ripcord.engine.threads=" + x.threads(),
                                "--ripcord.decode.max-batch=" + x.batch());
                assertThat(HostBudget.workerArguments(Role.PREFILL, options, host.processors())).as(id)
                        .containsExactly("--ripcord.engine.threads=" + x.threads());
                String heap = memory >= HostBudget.LARGE_MEMORY_GIB * GIB ? HostBudget.LARGE_HEAP_MAX
                        : HostBudget.HEAP_MAX;
                for (Role role : Role.values()) {
                    List<String> flags = LocalStack.serviceJvmFlags(options, role, host);
                    assertThat(flags).as("%s: %s's heap", id, role).contains("-Xmx" + heap);
                }
                List<String> gateway = HostBudget.jitFlags(Role.GATEWAY, options, host);
                if (x.gatewayC2()) {
                    assertThat(gateway).as("%s: the gateway keeps C2", id).containsExactly(HostBudget.COMPILE_SOONER);
                } else {
                    assertThat(gateway).as("%s: the gateway on C1", id)
                            .containsExactly("-XX:TieredStopAtLevel=1", HostBudget.COMPILE_SOONER);
                }
                for (Role worker : List.of(Role.PREFILL, Role.DECODE)) {
                    assertThat(HostBudget.jitFlags(worker, options, host)).as("%s: %s keeps C2 for the engine", id,
                            worker).contains("-XX:CompilerDirectivesFile=" + directives.toAbsolutePath().normalize());
                }
                String said = HostBudget.describe(host, options);
                assertThat(said).as(id).startsWith("host " + e.getKey() + " processors, " + memory / GIB + " GiB: ")
                        .contains(x.threads() + " engine thread(s) per worker (" + e.getKey() + " processors / 2 workers)")
                        .contains("decode batch " + x.batch()).contains("heap up to " + heap)
                        .endsWith("gateway JIT " + (x.gatewayC2() ? "C1 and C2" : "C1 only"));
            }
        }
    }

    @Test
    void threadsGivenOnTheCommandLineAreWhatUpSays() {
        StackOptions options = StackOptions.parse(new String[] {"--ripcord.engine.threads=3"}, ROOT);
        assertThat(HostBudget.describe(new HostBudget.Host(16, 64 * GIB), options))
                .contains("3 engine threads per worker (--ripcord.engine.threads)").contains("decode batch 32");
    }
}
