package dev.ripcord.cli.bench;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** Placeholder: Runs Ripcord's benchmarks without a hand-built classpath. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Runs Ripcord's benchmarks without a hand-built classpath.")
public final class BenchCommand implements Callable<Integer> {

  @Override
  public Integer call() {
    System.err.println("ripcord bench: not implemented yet");
    return 2;
  }
}
