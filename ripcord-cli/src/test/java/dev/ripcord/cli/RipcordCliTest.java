package dev.ripcord.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RipcordCliTest {

  @Test
  void helpExitsZero() {
    assertThat(RipcordCli.run("--help")).isZero();
  }

  @Test
  void unknownOptionIsAUsageError() {
    assertThat(RipcordCli.run("--modle=x")).isEqualTo(2);
  }
}
