package dev.ripcord.protocol.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * A throwaway PKI made at test time with the JDK's own {@code keytool}, as an operator would make one: a CA, and a
 * PKCS12 key store per party holding its key and certificate chain (its certificate, which the CA signs, then the
 * CA's). One trust store holds the CA, and both sides of a connection trust it. EC keys, valid for two days,
 * password {@link #PASSWORD}.
 *
 * <p>For tests of the internal API's mutual TLS, on either end (the gateway's worker client, a worker's server); it
 * lives here, next to the protocol, because both ends' tests use it. A test fixture: it ships in pd-protocol's
 * test-jar ({@code <type>test-jar</type>}, test scope), never in the main jar or a service.
 */
public final class TestPki {

    public static final String PASSWORD = "changeit";

    private final Path dir;

    private TestPki(Path dir) {
        this.dir = dir;
    }

    /** A new CA in {@code dir}, and the trust store that holds its certificate. */
    public static TestPki create(Path dir) {
        TestPki pki = new TestPki(dir);
        pki.keytool("-genkeypair", "-keystore", "ca.p12", "-alias", "ca", "-dname", "CN=Ripcord Test CA",
                "-ext", "bc:c");
        pki.keytool("-exportcert", "-keystore", "ca.p12", "-alias", "ca", "-rfc", "-file", "ca.pem");
        pki.keytool("-importcert", "-keystore", "truststore.p12", "-alias", "ca", "-file", "ca.pem", "-noprompt");
        return pki;
    }

    /**
     * A key store {@code <name>.p12} with a new key under alias {@code name} and its chain; {@code san} is the
     * certificate's subject alternative names, as keytool writes them ({@code ip:127.0.0.1,dns:prefill.internal}).
     */
    public Path issue(String name, String san) {
        // keytool signs with a key of the same store: made next to the CA's, then moved to a store of its own.
        keytool("-genkeypair", "-keystore", "ca.p12", "-alias", name, "-dname", "CN=" + name, "-signer", "ca",
                "-signerkeypass", PASSWORD, "-ext", "SAN=" + san);
        keytool("-importkeystore", "-srckeystore", "ca.p12", "-srcstoretype", "PKCS12", "-srcstorepass", PASSWORD,
                "-srckeypass", PASSWORD, "-srcalias", name, "-destkeystore", name + ".p12", "-noprompt");
        return dir.resolve(name + ".p12");
    }

    /** The PKCS12 trust store holding the CA's certificate. */
    public Path truststore() {
        return dir.resolve("truststore.p12");
    }

    public static KeyManagerFactory keyManagers(Path keystore) {
        try {
            KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            factory.init(load(keystore), PASSWORD.toCharArray());
            return factory;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    public static TrustManagerFactory trustManagers(Path truststore) {
        try {
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(load(truststore));
            return factory;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static KeyStore load(Path path) throws GeneralSecurityException {
        try (InputStream in = Files.newInputStream(path)) {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(in, PASSWORD.toCharArray());
            return store;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void keytool(String command, String... args) {
        // A dozen short-lived JVMs: C1 and the serial collector start them fastest.
        List<String> line = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", command));
        if (command.equals("-importkeystore")) {
            line.addAll(List.of("-deststoretype", "PKCS12", "-deststorepass", PASSWORD, "-destkeypass", PASSWORD));
        } else {
            line.addAll(List.of("-storetype", "PKCS12", "-storepass", PASSWORD, "-keypass", PASSWORD));
        }
        if (command.equals("-genkeypair")) {
            line.addAll(List.of("-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2"));
        }
        line.addAll(List.of(args));
        try {
            Process process = new ProcessBuilder(line).directory(dir.toFile()).redirectErrorStream(true).start();
            process.getOutputStream().close();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int status = process.waitFor();
            if (status != 0) {
                throw new IllegalStateException("keytool " + command + " exited with " + status + ": " + output);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
