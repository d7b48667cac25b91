package dev.ripcord.kv;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.members;
import static org.assertj.core.api.Assertions.assertThat;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.Location;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every package but {@code dev.ripcord.kv} is the library's internals, not its API: the session lifecycle
 * ({@code kv.session}), the transports ({@code kv.transport.tcp}, {@code kv.transport.shm}), the agent that wires
 * them ({@code kv.agent}), the frame codec ({@code kv.wire}) and the fence table and shared-memory files
 * ({@code kv.shm}). The services use {@code dev.ripcord.kv} only. Java without a module
 * path cannot hide a public class of another package, so these rules keep the boundary instead (the services
 * consume this library on the class path, where a module-info's exports would change nothing).
 */
class KvInternalsTest {
    static final String[] INTERNALS = {"dev.ripcord.kv.wire..", "dev.ripcord.kv.shm..", "dev.ripcord.kv.session..",
            "dev.ripcord.kv.transport..", "dev.ripcord.kv.agent.."};

    /**
     * Every Ripcord class on this module's class path: the library, its tests, pd-protocol. Imported from where
     * those classes are (not by scanning every jar on the class path for the package, which is much slower).
     */
    static final JavaClasses RIPCORD = new ClassFileImporter().importLocations(Stream.of(TransferAgent.class,
                    KvInternalsTest.class, dev.ripcord.protocol.CancelReason.class)
            .map(KvInternalsTest::whereClassesOf).collect(Collectors.toSet()));

    private static Location whereClassesOf(Class<?> c) {
        try {
            Path path = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
            return Files.isDirectory(path) ? Location.of(path) : Location.of(new JarFile(path.toFile()));
        } catch (IOException | URISyntaxException e) {
            throw new IllegalStateException("cannot locate the classes of " + c, e);
        }
    }

    @Test
    void theRulesSeeTheLibraryItsTestsAndPdProtocol() {
        assertThat(RIPCORD.contain(TransferAgent.class)).isTrue();
        assertThat(RIPCORD.contain(dev.ripcord.kv.wire.Frames.class)).isTrue();
        assertThat(RIPCORD.contain(dev.ripcord.kv.agent.DefaultTransferAgent.class)).isTrue();
        assertThat(RIPCORD.contain(KvInternalsTest.class)).isTrue();
        assertThat(RIPCORD.contain(dev.ripcord.protocol.CancelReason.class)).isTrue();
    }

    @Test
    void noClassOutsideTheLibraryDependsOnItsInternals() {
        noClasses().that().resideOutsideOfPackage("dev.ripcord.kv..")
                .should().dependOnClassesThat().resideInAnyPackage(INTERNALS)
                .because("only dev.ripcord.kv is kv-transfer-lib's API; the other packages are its internals")
                .check(RIPCORD);
    }

    @Test
    void thePublicApiExposesNoInternalType() {
        members().that().areDeclaredInClassesThat().resideInAPackage("dev.ripcord.kv")
                .and().areDeclaredInClassesThat(visibleOutsideThePackage())
                .and(visibleOutsideTheLibrary())
                .should(notMentionInternalTypes())
                .check(RIPCORD);
    }

    @Test
    void wireAndShmDependOnNeitherTheApiNorEachOther() {
        noClasses().that().resideInAPackage("dev.ripcord.kv.wire..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.ripcord.kv", "dev.ripcord.kv.shm..")
                .check(RIPCORD);
        noClasses().that().resideInAPackage("dev.ripcord.kv.shm..")
                .should().dependOnClassesThat().resideInAnyPackage("dev.ripcord.kv", "dev.ripcord.kv.wire..")
                .check(RIPCORD);
    }

    private static boolean isInternal(String pkg) {
        for (String internal : INTERNALS) {
            String root = internal.substring(0, internal.length() - 2);
            if (pkg.equals(root) || pkg.startsWith(root + ".")) {
                return true;
            }
        }
        return false;
    }

    /** Public, and so is every class it is nested in (a public record nested in a package-private interface is not). */
    private static DescribedPredicate<JavaClass> visibleOutsideThePackage() {
        return DescribedPredicate.describe("are visible outside their package", c -> {
            for (JavaClass k = c; k != null; k = k.getEnclosingClass().orElse(null)) {
                if (!k.getModifiers().contains(JavaModifier.PUBLIC)) {
                    return false;
                }
            }
            return true;
        });
    }

    private static DescribedPredicate<JavaMember> visibleOutsideTheLibrary() {
        return DescribedPredicate.describe("are public or protected", m ->
                m.getModifiers().contains(JavaModifier.PUBLIC) || m.getModifiers().contains(JavaModifier.PROTECTED));
    }

    private static ArchCondition<JavaMember> notMentionInternalTypes() {
        return new ArchCondition<>("not mention an internal type in their signature") {
            @Override
            public void check(JavaMember member, ConditionEvents events) {
                List<JavaClass> types = new ArrayList<>();
                if (member instanceof JavaField f) {
                    types.add(f.getRawType());
                } else if (member instanceof JavaCodeUnit c) {
                    types.add(c.getRawReturnType());
                    types.addAll(c.getRawParameterTypes());
                    types.addAll(c.getThrowsClause().getTypes());
                }
                for (JavaClass t : types) {
                    JavaClass base = t.isArray() ? t.getBaseComponentType() : t;
                    if (isInternal(base.getPackageName())) {
                        events.add(SimpleConditionEvent.violated(member,
                                member.getFullName() + " exposes internal type " + base.getName()));
                    }
                }
            }
        };
    }
}
