# One Dockerfile for the three services; SERVICE picks which:
#
#   docker build --build-arg SERVICE=gateway -t ripcord/gateway:0.1.0-SNAPSHOT .     (or: ./ripcord images)
#
# It builds with BuildKit and with the classic builder (DOCKER_BUILDKIT=0): no `# syntax=` line (no frontend image to
# pull) and no RUN --mount. Stages: `build` runs the Maven build (the same `package` as ./ripcord build, tests
# skipped) or, with --build-arg JARS=context, takes the jars ./ripcord build made on the host (what
# `./ripcord images --air-gapped` does: no network inside the build), `layers` splits the
# service's executable jar into Spring Boot's layers, the final stage is a JRE 25 with those layers, running as a
# numeric non-root user. See docs/deployment.md for the choices (JRE vs JDK, flags, memory) and how to pin bases by
# digest: --build-arg RUNTIME_IMAGE=eclipse-temurin:25-jre@sha256:<digest> (and BUILD_IMAGE likewise).
ARG BUILD_IMAGE=eclipse-temurin:25-jdk
ARG RUNTIME_IMAGE=eclipse-temurin:25-jre

FROM ${BUILD_IMAGE} AS build
ARG JARS=maven
WORKDIR /src
COPY . .
# The build stage takes no SERVICE argument, so the three image builds share its layer: Maven runs once. Jars are
# reproducible (project.build.outputTimestamp in pom.xml). The context carries only the three executable jars from
# target/ (.dockerignore), and only JARS=context uses them.
RUN case "${JARS}" in \
      maven) ./mvnw -B -ntp -q -Dmaven.test.skip=true package -pl gateway-service,prefill-service,decode-service -am \
             && rm -rf /root/.m2 ;; \
      context) for s in gateway prefill decode; do ls ${s}-service/target/${s}-service-*-exec.jar >/dev/null \
                 || { echo "JARS=context: run ./ripcord build first" >&2; exit 1; }; done ;; \
      *) echo "JARS is maven (build here) or context (the host's jars), not '${JARS}'" >&2; exit 1 ;; \
    esac

FROM ${BUILD_IMAGE} AS layers
ARG SERVICE
RUN case "${SERVICE}" in gateway|prefill|decode) ;; \
      *) echo "build with --build-arg SERVICE=gateway|prefill|decode (got '${SERVICE}')" >&2; exit 1 ;; esac
COPY --from=build /src/${SERVICE}-service/target/${SERVICE}-service-*-exec.jar /tmp/app.jar
# Spring Boot's layer split: dependencies change rarely, the application on every commit, so a rebuild ships
# only the small top layers. --launcher keeps the jar launcher, so the layout runs without unpacking again.
RUN java -Djarmode=tools -jar /tmp/app.jar extract --layers --launcher --destination /layers

FROM ${RUNTIME_IMAGE}
ARG SERVICE
ARG VERSION=0.1.0-SNAPSHOT
LABEL org.opencontainers.image.title="ripcord-${SERVICE}" \
      org.opencontainers.image.description="Ripcord ${SERVICE} service" \
      org.opencontainers.image.version="${VERSION}"
# The engine uses the Vector API, an incubator module. OpenJDK's JRE image keeps jdk.incubator.vector (it is a
# boot-layer module), but a runtime without it would fail every pod at start: fail the image build instead. The
# compose health checks use curl, which the Temurin images carry.
RUN java --add-modules jdk.incubator.vector -version >/dev/null 2>&1 \
      || { echo "this runtime image lacks jdk.incubator.vector: pass a JDK 25 image as RUNTIME_IMAGE" >&2; exit 1; } \
    && curl --version >/dev/null \
    && groupadd --system --gid 10001 ripcord \
    && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin ripcord
WORKDIR /app
# Owned by root, read-only to the service: the process cannot rewrite its own code.
COPY --from=layers /layers/dependencies/ ./
COPY --from=layers /layers/spring-boot-loader/ ./
COPY --from=layers /layers/snapshot-dependencies/ ./
COPY --from=layers /layers/application/ ./
# Tunable JVM options; compose and the Kubernetes manifests override them per service. The engine's weights and KV
# pages are off-heap (java.lang.foreign arenas, not counted by MaxDirectMemorySize), so the heap is a fraction of the
# container and the rest is left for them; MaxDirectMemorySize bounds only Netty's and NIO's buffers.
ENV JAVA_TOOL_OPTIONS="-XX:MaxRAMPercentage=25 -XX:MaxDirectMemorySize=256m"
USER 10001:10001
# The flags every Ripcord JVM needs (as in pom.xml's ripcord.jvm.flags and local-stack's launcher) are in the entry
# point, so overriding JAVA_TOOL_OPTIONS cannot lose them. Java runs as PID 1 and handles SIGTERM itself: Spring's
# graceful shutdown and the workers' drain run on `docker stop` / pod deletion.
ENTRYPOINT ["java", "--add-modules", "jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED", \
            "--sun-misc-unsafe-memory-access=allow", "-XX:+ExitOnOutOfMemoryError", \
            "org.springframework.boot.loader.launch.JarLauncher"]
