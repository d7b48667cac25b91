package dev.ripcord.stack;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which JVM flags make a service's AOT cache a different one (a training run costs a service start). */
class AotCacheTest {

    @Test
    void theJitSettingsOfUpAndOfATestStackShareOneCachePerJar(@TempDir Path checkout) throws IOException {
        Path directives = checkout.resolve(HostBudget.ENGINE_C2_DIRECTIVES);
        Files.createDirectories(directives.getParent());
        Files.writeString(directives, "[]");
        Path jar = jar(checkout.resolve("decode-service-exec.jar"));
        StackOptions up = StackOptions.parse(new String[0], checkout);
        StackOptions scalar = StackOptions.parse(new String[] {"--ripcord.engine.kernels=scalar"}, checkout);
        StackOptions test = TestStacks.options(Map.of(), checkout.resolve("logs"));
        List<Path> caches = List.of(
                AotCache.of(jar, LocalStack.serviceJvmFlags(up, Role.DECODE)).cacheFile(),
                AotCache.of(jar, LocalStack.serviceJvmFlags(scalar, Role.DECODE)).cacheFile(),
                AotCache.of(jar, withoutJitFlags(LocalStack.serviceJvmFlags(up, Role.DECODE))).cacheFile());
        assertThat(caches).containsOnly(caches.getFirst());
        // a test stack's other flags (its heap) make a cache of their own, the same whatever its JIT settings
        Path testCache = AotCache.of(jar, LocalStack.serviceJvmFlags(test, Role.DECODE)).cacheFile();
        assertThat(testCache).isNotEqualTo(caches.getFirst())
                .isEqualTo(AotCache.of(jar, LocalStack.serviceJvmFlags(TestStacks.asUp(test), Role.DECODE))
                        .cacheFile());
    }

    @Test
    void flagsThatShapeTheHeapOrTheClassesMakeADifferentCache(@TempDir Path dir) throws IOException {
        Path jar = jar(dir.resolve("gateway-exec.jar"));
        assertThat(AotCache.of(jar, List.of("-XX:+UseSerialGC")).cacheFile())
                .isNotEqualTo(AotCache.of(jar, List.of("-XX:+UseG1GC")).cacheFile());
    }

    @Test
    void aSabotagedServiceMapsTheCacheItsUnsabotagedTwinTrained(@TempDir Path dir) throws IOException {
        Path jar = jar(dir.resolve("decode-exec.jar"));
        List<String> flags = List.of("-XX:+UseSerialGC", "-Xmx256m");
        List<String> sabotaged = new java.util.ArrayList<>(flags);
        sabotaged.add("-D" + dev.ripcord.cancel.Sabotage.PROPERTY + "=keep-page");
        assertThat(AotCache.of(jar, sabotaged).cacheFile()).isEqualTo(AotCache.of(jar, flags).cacheFile());
    }

    /** A file that stands for a service's executable jar (the cache's directory is named after its content). */
    private static Path jar(Path path) throws IOException {
        return Files.write(path, new byte[] {'P', 'K', 3, 4});
    }

    private static List<String> withoutJitFlags(List<String> flags) {
        return flags.stream().filter(f -> !HostBudget.EARLY_C2_TIER.contains(f) && !f.equals(HostBudget.COMPILE_SOONER)
                && !f.startsWith("-XX:CompilerDirectivesFile=") && !f.equals("-XX:+UnlockDiagnosticVMOptions")
                && !f.equals(HostBudget.WORKER_CODE_CACHE))
                .toList();
    }
}
