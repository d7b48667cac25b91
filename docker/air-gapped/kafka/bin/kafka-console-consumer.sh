#!/usr/bin/env bash
# The stand-in's twin of Kafka's kafka-console-consumer.sh.
exec "$(dirname "$0")/kafka-run-class.sh" org.apache.kafka.tools.consumer.ConsoleConsumer "$@"
