#!/usr/bin/env bash
# The stand-in's twin of Kafka's kafka-run-class.sh: the same variables, every jar in /opt/kafka/libs.
if [ $# -lt 1 ]; then echo "USAGE: $0 [-daemon] [-name servicename] classname [opts]" >&2; exit 1; fi
base_dir=$(dirname "$0")/..
[ -z "${KAFKA_HEAP_OPTS-}" ] && KAFKA_HEAP_OPTS="-Xmx256M"
[ -z "${KAFKA_JVM_PERFORMANCE_OPTS-}" ] && KAFKA_JVM_PERFORMANCE_OPTS="-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true"
[ -z "${KAFKA_LOG4J_OPTS-}" ] && KAFKA_LOG4J_OPTS="-Dlog4j2.configurationFile=$base_dir/config/tools-log4j2.yaml"
[ -z "${LOG_DIR-}" ] && LOG_DIR="$base_dir/logs"
# shellcheck disable=SC2086 # the *_OPTS variables are word lists, as in Kafka's own script
exec "${JAVA_HOME:-/opt/java/openjdk}/bin/java" $KAFKA_HEAP_OPTS $KAFKA_JVM_PERFORMANCE_OPTS ${KAFKA_GC_LOG_OPTS-} \
  ${KAFKA_JMX_OPTS-} $KAFKA_LOG4J_OPTS -Dkafka.logs.dir="$LOG_DIR" -cp "$base_dir/libs/*" ${KAFKA_OPTS-} "$@"
