package dev.ripcord.protocol;

import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/** What a prefill and a decode worker compare before sharing KV, and how it travels. */
class PairingTest {

    @TempDir
    Path dir;

    @Test
    void aCheckpointIsIdentifiedByItsBytesNotItsName() throws Exception {
        Path a = Files.write(dir.resolve("a.gguf"), new byte[] {1, 2, 3});
        Path sameBytes = Files.write(dir.resolve("b.gguf"), new byte[] {1, 2, 3});
        Path otherBytes = Files.write(dir.resolve("a2.gguf"), new byte[] {1, 2, 4});

        String id = Pairing.modelIdentity("small", 42, a, null);
        assertThat(id).isEqualTo("sha256:039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81");
        assertThat(Pairing.modelIdentity("tiny", 7, sameBytes, null)).as("preset and seed unused").isEqualTo(id);
        assertThat(Pairing.modelIdentity("small", 42, otherBytes, null)).isNotEqualTo(id);
        assertThat(Pairing.modelIdentity("small", 42, a, otherBytes)).isEqualTo(id + "+tokenizer="
                + Pairing.modelIdentity("small", 42, otherBytes, null));
    }

    @Test
    void aPresetIsIdentifiedByItsNameAndSeed() {
        assertThat(Pairing.modelIdentity(" Small ", 42, null, null)).isEqualTo("preset:small/seed:42");
        assertThat(Pairing.modelIdentity("small", 43, null, null)).isNotEqualTo("preset:small/seed:42");
    }

    @Test
    void aMismatchNamesBothValues() {
        Pairing here = new Pairing("preset:small/seed:42", "lanes=16,int8=native,quantizedDot=decode");
        assertThat(here.mismatch(new Pairing(here.model(), here.numerics()))).isNull();
        assertThat(here.mismatch(new Pairing("sha256:ab", here.numerics())))
                .isEqualTo("model preset:small/seed:42 here, sha256:ab at the peer");
        assertThat(here.mismatch(new Pairing(here.model(), "lanes=8,int8=lanes,quantizedDot=decode")))
                .isEqualTo("numerics lanes=16,int8=native,quantizedDot=decode here, "
                        + "lanes=8,int8=lanes,quantizedDot=decode at the peer");
    }

    @Test
    void reservedAndPrefillRequestCarryThePairingAndOmitItWhenAbsent() {
        JsonMapper json = JsonMapper.builder().build();
        Pairing pairing = new Pairing("preset:tiny/seed:42", "lanes=8,int8=lanes,quantizedDot=decode");

        String reserved = json.writerFor(DecodeEvent.class).writeValueAsString(new DecodeEvent.Reserved("d", pairing));
        assertThat(json.readValue(reserved, DecodeEvent.class)).isEqualTo(new DecodeEvent.Reserved("d", pairing));
        assertThat(json.readValue("{\"type\":\"RESERVED\",\"transfer\":\"d\"}", DecodeEvent.class))
                .as("a worker that does not say").isEqualTo(new DecodeEvent.Reserved("d"));
        assertThat(json.writerFor(DecodeEvent.class).writeValueAsString(new DecodeEvent.Reserved("d"))).doesNotContain("pairing");

        PrefillRequest request = json.readValue(json.writeValueAsString(
                new PrefillRequest("r", new int[] {1}, null, "d", pairing)), PrefillRequest.class);
        assertThat(request.pairing()).isEqualTo(pairing);
        assertThat(json.writeValueAsString(new PrefillRequest("r", new int[] {1}, null, "d")))
                .doesNotContain("pairing");
    }
}
