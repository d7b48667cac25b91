#!/usr/bin/env bash
# The stand-in's twin of Kafka's kafka-server-start.sh.
if [ $# -lt 1 ]; then echo "USAGE: $0 server.properties [--override property=value]*" >&2; exit 1; fi
base_dir=$(dirname "$0")
[ -z "${KAFKA_LOG4J_OPTS-}" ] && export KAFKA_LOG4J_OPTS="-Dlog4j2.configurationFile=$base_dir/../config/log4j2.yaml"
[ -z "${KAFKA_HEAP_OPTS-}" ] && export KAFKA_HEAP_OPTS="-Xmx1G -Xms1G"
exec "$base_dir/kafka-run-class.sh" kafka.Kafka "$@"
