package dev.ripcord.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class RipcordCliTest {

  record Run(int status, String out, String err) {
  }

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = RipcordCli.commandLine();
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int status = cli.execute(args);
    return new Run(status, out.toString(), err.toString());
  }

  @Test
  void helpExitsZero() {
    assertThat(RipcordCli.run("--help")).isZero();
  }

  @Test
  void unknownOptionIsAUsageError() {
    assertThat(RipcordCli.run("--modle=x")).isEqualTo(2);
  }

  /** Regression: picocli's own message flagged the value too ("Unknown options: '--sinse', '10m'"). */
  @Test
  void aMistypedOptionIsOneLineThatNamesTheOptionAndItsNearestNeighbourButNotTheValue() {
    Run spaced = run("audit", "--sinse", "10m");
    Run joined = run("audit", "--sinse=10m");

    assertThat(spaced.status()).isEqualTo(2);
    assertThat(spaced.err()).isEqualTo(
        "ripcord audit: unknown option '--sinse'; did you mean '--since'? (./ripcord audit --help)\n");
    assertThat(joined.status()).isEqualTo(2);
    assertThat(joined.err()).isEqualTo(spaced.err());
    assertThat(spaced.out()).isEmpty();
  }

  @Test
  void anOptionFarFromEveryKnownOneGetsNoSuggestion() {
    Run run = run("cancels", "--frobnicate");

    assertThat(run.status()).isEqualTo(2);
    assertThat(run.err()).startsWith("ripcord cancels: unknown option '--frobnicate' (").doesNotContain("did you mean");
  }
}
