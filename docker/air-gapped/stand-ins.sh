#!/usr/bin/env bash
# Air-gapped base images: for each base image the Dockerfile and the compose files name that this Docker engine
# lacks, build a stand-in under the same tag from what the machine itself has, never from a registry:
#   eclipse-temurin:25-jdk   Debian bookworm (mmdebstrap or debootstrap, from the machine's apt sources) + this
#                            machine's JDK 25 at /opt/java/openjdk, JAVA_HOME and PATH as in the official image
#   eclipse-temurin:25-jre   the same with a runtime jlink'd from that JDK (every java.se and runtime jdk.* module,
#                            jdk.incubator.vector included)
#   node:22-bookworm-slim    Debian bookworm with Debian's nodejs and npm (enough for `npm pack`)
#   apache/kafka:4.1.2       Kafka 4.1.2's jars from Maven Central (docker/air-gapped/kafka/pom.xml) on the JRE
#                            above, with the official image's /opt/kafka/bin/*.sh, /etc/kafka/docker/run and its
#                            KAFKA_* environment-to-properties convention
# An existing tag is never replaced (a real image, or a stand-in built earlier). Every stand-in carries the label
# dev.ripcord.stand-in=true. Called by `./ripcord images --air-gapped` (JAVA_HOME a JDK 25, cwd the repository).
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { printf '%s\n' "ripcord images: $*" >&2; }
loud() { printf '\n%s\n%s\n%s\n\n' "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" \
  "!!! STAND-IN: $* " "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!" >&2; }
present() { docker image inspect "$1" >/dev/null 2>&1; }
classic() { DOCKER_BUILDKIT=0 docker build --pull=false -q "$@" >/dev/null; }

work="${XDG_CACHE_HOME:-$HOME/.cache}/ripcord/air-gapped"
mkdir -p "$work"
JDK="${JAVA_HOME:?JAVA_HOME must name a JDK 25}"

rootfs() { # $1 image tag, $2 extra packages (comma-separated): a Debian bookworm root file system, imported once
  local tag="$1" packages="$2" tar="$work/${1//[:\/]/_}.tar"
  present "$tag" && return 0
  say "building a Debian bookworm root file system ($packages) from this machine's apt sources"
  if command -v mmdebstrap >/dev/null 2>&1; then
    mmdebstrap --quiet --variant=minbase --include="$packages" \
      --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
      --dpkgopt='path-exclude=/usr/share/locale/*' bookworm "$tar"
  elif command -v debootstrap >/dev/null 2>&1; then
    local dir; dir=$(mktemp -d "$work/rootfs.XXXXXX")
    debootstrap --variant=minbase --include="$packages" bookworm "$dir" >&2
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
    tar -C "$dir" -cf "$tar" .
    rm -rf "$dir"
  else
    say "neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap); cannot build $tag"
    exit 2
  fi
  docker import --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    "$tar" "$tag" >/dev/null
  rm -f "$tar"
}

base=ripcord-air-gapped/debian:bookworm
temurin() { # $1 jdk|jre
  local tag="eclipse-temurin:25-$1" ctx
  if present "$tag"; then say "$tag is present: kept as it is"; return 0; fi
  [ "$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$JDK/release")" = 25 ] || { say "$JDK is not a JDK 25"; exit 2; }
  rootfs "$base" ca-certificates,curl,passwd,tzdata,procps
  loud "building $tag from Debian bookworm and $JDK (not the official Eclipse Temurin image)"
  ctx=$(mktemp -d "$work/ctx.XXXXXX")
  if [ "$1" = jdk ]; then
    cp -a "$JDK/." "$ctx/java"
  else
    "$JDK/bin/jlink" --strip-debug --no-man-pages --no-header-files --output "$ctx/java" --add-modules \
      java.se,jdk.incubator.vector,jdk.unsupported,jdk.management,jdk.management.agent,jdk.management.jfr,jdk.jfr,jdk.crypto.ec,jdk.crypto.cryptoki,jdk.naming.dns,jdk.naming.rmi,jdk.net,jdk.nio.mapmode,jdk.zipfs,jdk.localedata,jdk.charsets,jdk.security.auth,jdk.security.jgss,jdk.httpserver,jdk.jcmd,jdk.attach,jdk.jdwp.agent,jdk.sctp,jdk.dynalink,jdk.xml.dom,jdk.jsobject
  fi
  cp docker/air-gapped/temurin/Dockerfile "$ctx/"
  classic --build-arg BASE_IMAGE="$base" --build-arg FLAVOUR="$1" \
    --build-arg JAVA_VERSION="$(sed -n 's/^SEMANTIC_VERSION="\(.*\)"/jdk-\1/p' "$JDK/release")" -t "$tag" "$ctx"
  rm -rf "$ctx"
  say "built stand-in $tag"
}

node() {
  local tag=node:22-bookworm-slim
  if present "$tag"; then say "$tag is present: kept as it is"; return 0; fi
  loud "building $tag from Debian bookworm's nodejs and npm (Node $(apt-cache policy nodejs 2>/dev/null | sed -n 's/ *Candidate: //p'), not the official Node.js 22 image)"
  rootfs "$tag" ca-certificates,nodejs,npm
  say "built stand-in $tag"
}

kafka() {
  local tag=apache/kafka:4.1.2 ctx
  if present "$tag"; then say "$tag is present: kept as it is"; return 0; fi
  temurin jre
  loud "building $tag from Kafka 4.1.2's jars on Maven Central (not the official Apache Kafka image)"
  ctx=$(mktemp -d "$work/ctx.XXXXXX")
  ./mvnw -B -ntp -q -f docker/air-gapped/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$ctx/libs"
  cp -a docker/air-gapped/kafka/bin docker/air-gapped/kafka/docker docker/air-gapped/kafka/Dockerfile "$ctx/"
  classic --build-arg BASE_IMAGE=eclipse-temurin:25-jre -t "$tag" "$ctx"
  rm -rf "$ctx"
  say "built stand-in $tag"
}

for image in "$@"; do
  case "$image" in
    eclipse-temurin:25-jdk) temurin jdk ;;
    eclipse-temurin:25-jre) temurin jre ;;
    node:22-bookworm-slim) node ;;
    apache/kafka:4.1.2) kafka ;;
    *) if present "$image"; then say "$image is present"; else
         say "$image is absent and has no stand-in: load it with docker load, or build without it"; exit 2; fi ;;
  esac
done
