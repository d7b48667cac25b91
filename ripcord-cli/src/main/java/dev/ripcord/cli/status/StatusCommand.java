package dev.ripcord.cli.status;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** Placeholder: Lists every running instance of the local stack, its URL and health (issue #12). */
@Command(name = "status", mixinStandardHelpOptions = true, description = "Lists every running instance of the local stack, its URL and health (issue #12).")
public final class StatusCommand implements Callable<Integer> {

  @Override
  public Integer call() {
    System.err.println("ripcord status: not implemented yet");
    return 2;
  }
}
