#!/usr/bin/env bash
# Shared by test.sh and demo.sh: check the toolchain, build .venv, fetch the jars.
# Sourced, not run: leaves $PY pointing at the venv's python.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

need() {  # need <command> <debian package> <what for>
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing $2 ($3)..."
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2") >/dev/null
    command -v "$1" >/dev/null 2>&1 && return 0
  fi
  echo "zkconsumer: please install $2 ($3); '$1' is not on PATH" >&2
  exit 1
}
need java openjdk-17-jre-headless "runs ZooKeeper and Kafka"
need mvn maven "fetches the Kafka jars"
need krb5-config libkrb5-dev "builds the kerberos package (ZooKeeper GSSAPI logins)"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 10)' 2>/dev/null || {
  echo "zkconsumer: Python >= 3.10 is required (found: $("$PYTHON" --version 2>&1))" >&2; exit 1; }
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null || need false python3-venv "creates .venv"

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
PY="$ROOT/.venv/bin/python"
stamp=".venv/.zkconsumer-installed"
want="$(cat setup.cfg scripts/constraints.txt | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing zkconsumer and its dependencies into .venv (pyspark is large: first time takes minutes)..."
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q -c scripts/constraints.txt -e ".[spark,spark-connect,dev,kerberos,docs]"
  echo "$want" > "$stamp"
fi
scripts/fetch-jars.sh
