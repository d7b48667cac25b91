#!/usr/bin/env bash
# Compares deployment-tests' Kustomize subset (deployment-tests/.../Kustomize.java) with real Kustomize, overlay by
# overlay, resource by resource. Needs kubectl (or kustomize) on PATH; CI has neither and relies on the subset, so
# run this after changing k8s/ or Kustomize.java on a machine that has one.
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME="$(./ripcord java | head -n1)"
./mvnw -B -ntp -q -DskipTests install -pl deployment-tests -am
./mvnw -B -ntp -q -pl deployment-tests test-compile dependency:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/compare.classpath
cp="deployment-tests/target/test-classes:$(cat deployment-tests/target/compare.classpath)"
render() { if command -v kustomize >/dev/null; then kustomize build "$1"; else kubectl kustomize "$1"; fi; }
status=0
for dir in k8s/base k8s/overlays/*/; do
  dir="${dir%/}"
  render "$dir" > "deployment-tests/target/kubectl-$(basename "$dir").yaml"
  "$JAVA_HOME/bin/java" -cp "$cp" dev.ripcord.deploy.Kustomize "$dir" \
    "deployment-tests/target/kubectl-$(basename "$dir").yaml" || status=1
done
exit $status
