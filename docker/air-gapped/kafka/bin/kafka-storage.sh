#!/usr/bin/env bash
# The stand-in's twin of Kafka's kafka-storage.sh.
exec "$(dirname "$0")/kafka-run-class.sh" kafka.tools.StorageTool "$@"
