#!/usr/bin/env bash
# Fetch the Maven jar sets the local cluster and interop tests run from into .jars/ (once).
set -euo pipefail
cd "$(dirname "$0")/.."
for name in kafka39 kafka11 spark-kafka; do
  if compgen -G ".jars/$name/*.jar" >/dev/null; then continue; fi
  echo "fetching $name jars with mvn (zkconsumer/testing/poms/$name/pom.xml)..."
  rm -rf ".jars/$name.partial"
  mvn -B -q -f "zkconsumer/testing/poms/$name/pom.xml" \
    org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
    -DoutputDirectory="$PWD/.jars/$name.partial" -DincludeScope=runtime
  mv ".jars/$name.partial" ".jars/$name"
done
