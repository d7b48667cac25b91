#!/usr/bin/env bash
# The stand-in's twin of Kafka's kafka-configs.sh.
exec "$(dirname "$0")/kafka-run-class.sh" kafka.admin.ConfigCommand "$@"
