package dev.ripcord.stack.serve;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.ripcord.stack.serve.ServeOptions.Target;
import dev.ripcord.stack.serve.ServeOptions.UsageException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ./ripcord bench serve}'s command line: what each option means, and the one-line error of each mistake. */
class ServeOptionsTest {

    private static ServeOptions parse(String... args) {
        return ServeOptions.parse(args, Map.of());
    }

    @Test
    void defaultsAreTheDocumentedLoad() {
        ServeOptions o = parse("--target=llama=http://127.0.0.1:18080");

        assertThat(o.targets()).containsExactly(new Target("llama", URI.create("http://127.0.0.1:18080")));
        assertThat(o.concurrency()).containsExactly(1, 8, 32);
        assertThat(o.requestsAt(1)).isEqualTo(20);
        assertThat(o.requestsAt(8)).isEqualTo(40);
        assertThat(o.requestsAt(32)).isEqualTo(160);
        assertThat(o.promptWords()).isEqualTo(new ServeOptions.PromptWords(15, 25));
        assertThat(o.maxTokens()).isEqualTo(64);
        assertThat(o.leaveShare()).isZero();
        assertThat(o.seed()).isEqualTo(7);
        assertThat(o.rounds()).isEqualTo(1);
        assertThat(o.timeout()).isEqualTo(Duration.ofSeconds(300));
        assertThat(o.apiKeyOf("llama")).isNull();
        assertThat(o.modelOf("llama")).isNull();
        assertThat(o.json()).isFalse();
    }

    @Test
    void everyOptionIsRead() {
        ServeOptions o = parse("--target=llama=http://127.0.0.1:18080/", "--target=ripcord=http://localhost:8080",
                "--concurrency=1, 2,4", "--requests=6", "--prompt-tokens=5-9", "--max-tokens=16", "--leave=0.3@60ms",
                "--seed=-3", "--rounds=2", "--timeout=1.5s", "--pause=0ms", "--warm-up=1", "--json",
                "--model=stories15M", "--model=ripcord=ripcord-small", "--api-key=ripcord=rk-abc_-9");

        assertThat(o.targets()).extracting(Target::name).containsExactly("llama", "ripcord");
        assertThat(o.targets().getFirst().url()).isEqualTo(URI.create("http://127.0.0.1:18080"));
        assertThat(o.concurrency()).containsExactly(1, 2, 4);
        assertThat(o.requestsAt(4)).isEqualTo(6);
        assertThat(o.promptWords()).isEqualTo(new ServeOptions.PromptWords(5, 9));
        assertThat(o.maxTokens()).isEqualTo(16);
        assertThat(o.leaveShare()).isEqualTo(0.3);
        assertThat(o.leaveAfter()).isEqualTo(Duration.ofMillis(60));
        assertThat(o.seed()).isEqualTo(-3);
        assertThat(o.rounds()).isEqualTo(2);
        assertThat(o.timeout()).isEqualTo(Duration.ofMillis(1500));
        assertThat(o.pause()).isEqualTo(Duration.ZERO);
        assertThat(o.warmUp()).isEqualTo(1);
        assertThat(o.json()).isTrue();
        assertThat(o.modelOf("llama")).isEqualTo("stories15M");
        assertThat(o.modelOf("ripcord")).isEqualTo("ripcord-small");
        assertThat(o.apiKeyOf("ripcord")).isEqualTo("rk-abc_-9");
        assertThat(o.apiKeyOf("llama")).isNull();
    }

    @Test
    void aKeyWithoutATargetNameGoesToEveryTargetAndOverridesTheEnvironment() {
        String[] args = {"--target=a=http://h:1", "--target=b=http://h:2", "--api-key=b=kb"};

        ServeOptions fromEnv = ServeOptions.parse(args, Map.of("RIPCORD_API_KEY", "rk-env"));
        assertThat(fromEnv.apiKeyOf("a")).isEqualTo("rk-env");
        assertThat(fromEnv.apiKeyOf("b")).isEqualTo("kb");

        ServeOptions given = ServeOptions.parse(new String[] {"--target=a=http://h:1", "--api-key=rk-flag"},
                Map.of("RIPCORD_API_KEY", "rk-env"));
        assertThat(given.apiKeyOf("a")).isEqualTo("rk-flag");
    }

    @Test
    void aTargetWithoutANameIsNamedAfterItsHostAndPort() {
        assertThat(parse("--target=http://127.0.0.1:18080").targets())
                .containsExactly(new Target("127.0.0.1:18080", URI.create("http://127.0.0.1:18080")));
    }

    @Test
    void aTargetWithoutAUrlIsTheGatewayOfTheStackThatRipcordUpRuns(@TempDir Path repo) throws Exception {
        Files.createDirectories(repo.resolve(".ripcord"));
        Files.writeString(repo.resolve(".ripcord/stack.json"), """
                {"schemaVersion":1,"pid":4242,"startedAt":"2026-12-01T12:00:00Z","kafka":"localhost:9092",\
                "logDir":"/repo/.ripcord/logs","instances":[{"id":"gateway-1","role":"gateway",\
                "url":"http://localhost:8080","pid":4250},{"id":"prefill-1","role":"prefill",\
                "url":"http://localhost:8081","pid":4251}]}
                """);
        Path below = Files.createDirectories(repo.resolve("local-stack"));

        ServeOptions o = parse("--target=llama=http://127.0.0.1:18080", "--target=ripcord").resolve(below);

        assertThat(o.targets()).containsExactly(new Target("llama", URI.create("http://127.0.0.1:18080")),
                new Target("ripcord", URI.create("http://localhost:8080")));
    }

    @Test
    void aTargetWithoutAUrlAndNoRunningStackIsAUsageError(@TempDir Path empty) {
        assertThatThrownBy(() -> parse("--target=ripcord").resolve(empty))
                .isInstanceOf(UsageException.class)
                .hasMessageContaining("--target=ripcord has no URL")
                .hasMessageContaining("./ripcord up");
    }

    @Test
    void helpIsAskedFor() {
        assertThatThrownBy(() -> parse("--target=a=http://h:1", "--help"))
                .isInstanceOf(ServeOptions.HelpRequested.class);
    }

    @Test
    void everyMistakeIsAOneLineUsageErrorNamingTheOption() {
        String t = "--target=a=http://h:1";
        Map<List<String>, String> mistakes = Map.ofEntries(
                Map.entry(List.of(), "no --target"),
                Map.entry(List.of("target=a=http://h:1"), "unexpected argument 'target=a=http://h:1'"),
                Map.entry(List.of(t, "--clients=3"), "unknown option --clients"),
                Map.entry(List.of(t, "--target=a=http://h:2"), "the name 'a' is given twice"),
                Map.entry(List.of("--target=a=ftp://h:1"), "is not an http(s)://host[:port] URL"),
                Map.entry(List.of("--target=a=http://h:1/v1"), "without a path"),
                Map.entry(List.of("--target=a b=http://h:1"), "a name is letters"),
                Map.entry(List.of(t, "--concurrency=1,x"), "--concurrency=1,x: 'x' is not an integer"),
                Map.entry(List.of(t, "--concurrency=1,0"), "--concurrency=1,0: 0 is not a positive integer"),
                Map.entry(List.of(t, "--concurrency=1,,2"), "'' is not an integer"),
                Map.entry(List.of(t, "--requests=-1"), "--requests=-1: -1 is not a positive integer"),
                Map.entry(List.of(t, "--prompt-tokens=25-15"), "--prompt-tokens=25-15: expected 1 <= MIN <= MAX"),
                Map.entry(List.of(t, "--prompt-tokens=abc"), "expected MIN-MAX or N"),
                Map.entry(List.of(t, "--leave=1.5@60ms"), "the share 1.5 is not between 0 and 1"),
                Map.entry(List.of(t, "--leave=0.3"), "say when clients leave, e.g. --leave=0.3@60ms"),
                Map.entry(List.of(t, "--leave=0.3@60"), "--leave: '60' is not a duration"),
                Map.entry(List.of(t, "--leave=x@60ms"), "'x' is not a share"),
                Map.entry(List.of(t, "--timeout=0s"), "--timeout must be more than 0"),
                Map.entry(List.of(t, "--seed=1.5"), "--seed=1.5 is not an integer"),
                Map.entry(List.of(t, "--rounds=2", "--rounds=3"), "--rounds is given twice"),
                Map.entry(List.of(t, "--warm-up=0"), "--warm-up=0: 0 is not a positive integer"),
                Map.entry(List.of(t, "--api-key=k1", "--api-key=k2"), "--api-key without a target name is given twice"),
                Map.entry(List.of(t, "--api-key=a="), "the value for 'a' is empty"),
                Map.entry(List.of(t, "--model="), "--model= is empty"));
        mistakes.forEach((args, message) -> assertThatThrownBy(() -> parse(args.toArray(String[]::new)))
                .as("%s", args)
                .isInstanceOf(UsageException.class)
                .hasMessageContaining(message)
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n")));
    }
}
