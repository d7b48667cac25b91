package dev.ripcord.cli;

import dev.ripcord.cli.audit.AuditCommand;
import dev.ripcord.cli.bench.BenchCommand;
import dev.ripcord.cli.cancels.CancelsCommand;
import dev.ripcord.cli.status.StatusCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The operator's fast commands. Each subcommand lives in its own package and owns its options; this class only
 * lists them. Exit codes: 0 success, 1 the command ran and found a problem (e.g. an audit violation), 2 usage error.
 */
@Command(name = "ripcord", mixinStandardHelpOptions = true, versionProvider = RipcordCli.Version.class,
    description = "Ripcord operator commands.",
    subcommands = {AuditCommand.class, CancelsCommand.class, StatusCommand.class, BenchCommand.class})
public final class RipcordCli {

  public static void main(String[] args) {
    System.exit(run(args));
  }

  /** Runs the CLI without exiting the JVM (for tests); returns the exit code. */
  public static int run(String... args) {
    CommandLine cli = new CommandLine(new RipcordCli());
    cli.setCaseInsensitiveEnumValuesAllowed(true);
    return cli.execute(args);
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = RipcordCli.class.getPackage().getImplementationVersion();
      return new String[] {"ripcord " + (v == null ? "0.1.0-SNAPSHOT" : v)};
    }
  }
}
