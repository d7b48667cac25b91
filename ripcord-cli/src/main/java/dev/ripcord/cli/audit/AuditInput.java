package dev.ripcord.cli.audit;

import java.util.ArrayList;
import java.util.List;

import dev.ripcord.cancel.CancelEvent;
import dev.ripcord.lifecycle.LifecycleEvent;

/**
 * What the audit read, from Kafka or a dump: the lifecycle events, the cancel events, and every record it had to
 * skip (corrupt or foreign), each with where it was and why.
 */
final class AuditInput {

  final List<LifecycleEvent> events = new ArrayList<>();
  final List<CancelEvent> cancels = new ArrayList<>();
  final List<String> skipped = new ArrayList<>();
}
