package dev.ripcord.cli.cancels;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** Placeholder: Operator tools over the cancellations topic: tail, publish, replay, dlq (issue #12). */
@Command(name = "cancels", mixinStandardHelpOptions = true, description = "Operator tools over the cancellations topic: tail, publish, replay, dlq (issue #12).")
public final class CancelsCommand implements Callable<Integer> {

  @Override
  public Integer call() {
    System.err.println("ripcord cancels: not implemented yet");
    return 2;
  }
}
