package dev.ripcord.cli;

import dev.ripcord.cli.audit.AuditCommand;
import dev.ripcord.cli.bench.BenchCommand;
import dev.ripcord.cli.cancels.CancelsCommand;
import dev.ripcord.cli.status.StatusCommand;
import dev.ripcord.protocol.Suggestions;
import java.util.Arrays;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;

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
    return commandLine().execute(args);
  }

  static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new RipcordCli());
    cli.setCaseInsensitiveEnumValuesAllowed(true);
    cli.setParameterExceptionHandler(RipcordCli::usageError);
    return cli;
  }

  /**
   * A usage error in the style every Ripcord tool shares (the {@code ripcord} script's, {@code ./ripcord up}'s): one
   * line, {@code ripcord audit: unknown option '--sinse'; did you mean '--since'? (./ripcord audit --help)}, and
   * status 2. Only the option is named, never the value after it; the nearest option comes from
   * {@link Suggestions}.
   */
  static int usageError(CommandLine.ParameterException e, String[] args) {
    CommandSpec spec = e.getCommandLine().getCommandSpec();
    String command = spec.qualifiedName(" ");
    String help = " (./" + command + " --help)";
    String message = e.getMessage();
    if (e instanceof CommandLine.UnmatchedArgumentException unmatched && !unmatched.getUnmatched().isEmpty()) {
      String first = unmatched.getUnmatched().getFirst();
      if (first.startsWith("-")) {
        String option = first.contains("=") ? first.substring(0, first.indexOf('=')) : first;
        String dashes = option.startsWith("--") ? "--" : "-";
        List<String> names = spec.options().stream().flatMap(o -> Arrays.stream(o.names()))
            .filter(n -> n.startsWith(dashes) && (dashes.equals("--") || !n.startsWith("--")))
            .map(n -> n.substring(dashes.length())).toList();
        message = "unknown option '" + option + "'"
            + Suggestions.didYouMean(option.substring(dashes.length()), names, dashes);
      } else {
        message = "unexpected argument '" + first + "'";
      }
    }
    e.getCommandLine().getErr().println(command + ": " + message + help);
    e.getCommandLine().getErr().flush();
    return 2;
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = RipcordCli.class.getPackage().getImplementationVersion();
      return new String[] {"ripcord " + (v == null ? "0.1.0-SNAPSHOT" : v)};
    }
  }
}
