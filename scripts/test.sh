#!/usr/bin/env bash
# Install everything (venv, packages, jars) and run every test against a real local cluster.
# Extra arguments go to pytest, e.g. scripts/test.sh tests/unit -x (then only that runs).
set -euo pipefail
source "$(dirname "$0")/setup-env.sh"
started=$(date +%s)
set +e
"$PY" -m pytest "${@:-tests}"
rc=$?
if [ $# -eq 0 ]; then
  # The ZooKeeper-era pairings users run: the connector and mixed Scala/zkconsumer groups on
  # Kafka 1.1.1 and 0.10.2.2 with ZooKeeper 3.4.14 (everything above ran on 3.9.1 / 3.8).
  "$PY" scripts/matrix.py --pairings 1.1.1/3.4.14,0.10.2.2/3.4.14 \
    --tests tests/cluster/test_connector.py,tests/interop/test_mixed_group.py
  old=$?
  [ $rc -eq 0 ] && rc=$old
fi
set -e
echo "scripts/test.sh: exit $rc after $(( $(date +%s) - started ))s"
exit $rc
