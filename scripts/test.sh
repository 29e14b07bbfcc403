#!/usr/bin/env bash
# Install everything (venv, packages, jars) and run every test against a real local cluster.
# Extra arguments go to pytest, e.g. scripts/test.sh tests/unit -x
set -euo pipefail
source "$(dirname "$0")/setup-env.sh"
started=$(date +%s)
set +e
"$PY" -m pytest "${@:-tests}"
rc=$?
set -e
echo "scripts/test.sh: pytest exit $rc after $(( $(date +%s) - started ))s"
exit $rc
