package dev.ripcord.cli.audit;

import java.util.concurrent.Callable;
import picocli.CommandLine.Command;

/** Placeholder: Checks the lifecycle log's invariants over a time range or a dump (issue #12). */
@Command(name = "audit", mixinStandardHelpOptions = true, description = "Checks the lifecycle log's invariants over a time range or a dump (issue #12).")
public final class AuditCommand implements Callable<Integer> {

  @Override
  public Integer call() {
    System.err.println("ripcord audit: not implemented yet");
    return 2;
  }
}
