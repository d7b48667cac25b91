package dev.ripcord.gateway.auth;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.context.annotation.UserConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

/** What the gateway does with its auth configuration at start-up, and the key check itself. */
@ExtendWith(OutputCaptureExtension.class)
class AuthStartupTest {

    private static final String KEY = "rk-startup-test-key";

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(UserConfigurations.of(AuthConfiguration.class));

    @Test
    void authEnabledWithoutAnyKeyHashRefusesToStartAndSaysWhatToSet() {
        runner.withPropertyValues("ripcord.gateway.auth.enabled=true").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                    .hasMessageContaining("no ripcord.gateway.auth.api-key-hashes are configured")
                    .hasMessageContaining("ripcord.gateway.auth.enabled=false");
        });
    }

    @Test
    void aMalformedHashIsRefusedWithoutEchoingItInCaseItIsAKey(CapturedOutput output) {
        runner.withPropertyValues("ripcord.gateway.auth.api-key-hashes=" + KEY).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                    .hasMessageContaining("api-key-hashes[0] must be sha256:<64 lowercase hex>")
                    .hasMessageNotContaining(KEY);
        });
        assertThat(written(output)).doesNotContain(KEY);
    }

    @Test
    void authDisabledStartsWithALoudWarning(CapturedOutput output) {
        runner.withPropertyValues("ripcord.gateway.auth.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(ApiKeyFilter.class);
        });
        assertThat(written(output)).contains("AUTHENTICATION IS DISABLED");
    }

    @Test
    void configuredHashesAreAcceptedAndTheKeyIsNeverLogged(CapturedOutput output) {
        runner.withPropertyValues("ripcord.gateway.auth.api-key-hashes=" + ApiKeys.hash(KEY)).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).hasSingleBean(ApiKeyFilter.class);
        });
        assertThat(written(output)).contains("1 key(s) configured").doesNotContain(KEY);
    }

    @Test
    void theVerifierMatchesExactlyTheConfiguredKeysAndNamesThemByIdentity() {
        String other = "rk-another-key";
        ApiKeyVerifier verifier = new ApiKeyVerifier(List.of(ApiKeys.hash(KEY), ApiKeys.hash(other), ApiKeys.hash(KEY)));
        assertThat(verifier.size()).as("a key listed twice counts once").isEqualTo(2);
        assertThat(verifier.identify(KEY)).contains(ApiKeys.identityOfHash(ApiKeys.hash(KEY)));
        assertThat(verifier.identify(other)).contains(ApiKeys.identityOfHash(ApiKeys.hash(other)));
        for (String wrong : new String[] {"", KEY + " ", KEY.substring(1), KEY.toUpperCase(), ApiKeys.hash(KEY)}) {
            assertThat(verifier.identify(wrong)).as("'%s'", wrong).isEmpty();
        }
        assertThat(ApiKeys.identityOfHash(ApiKeys.hash(KEY))).matches("key-[0-9a-f]{12}")
                .isEqualTo("key-" + ApiKeys.hash(KEY).substring("sha256:".length(), "sha256:".length() + 12));
    }

    @Test
    void theBearerSchemeIsCaseInsensitiveAndAnEmptyKeyIsNoKey() {
        assertThat(ApiKeyFilter.bearer("Bearer abc")).contains("abc");
        assertThat(ApiKeyFilter.bearer("bearer abc")).contains("abc");
        assertThat(ApiKeyFilter.bearer("Bearer ")).isEmpty();
        assertThat(ApiKeyFilter.bearer("Basic abc")).isEmpty();
        assertThat(ApiKeyFilter.bearer(null)).isEmpty();
    }

    /**
     * Everything logged so far, once it is written. The services' log appenders are asynchronous (AsyncLogAppenders,
     * wrapped by the first Spring application this JVM started): a line is written by the appender's thread, after
     * the code that logged it returned. A marker logged now comes out after every line queued before it (one queue,
     * one writer), so once it is in the output, so is everything logged before it.
     */
    private static String written(CapturedOutput output) {
        String marker = "logs-written-" + java.util.UUID.randomUUID();
        org.slf4j.LoggerFactory.getLogger(AuthStartupTest.class).warn(marker);
        org.awaitility.Awaitility.await("the log's marker written").atMost(java.time.Duration.ofSeconds(30))
                .until(() -> output.getAll().contains(marker));
        return output.getAll();
    }
}
