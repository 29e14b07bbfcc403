#!/usr/bin/env bash
# The main job on the embedded local cluster (installs what it needs first, like test.sh).
set -euo pipefail
source "$(dirname "$0")/setup-env.sh"
exec "$PY" scripts/demo.py "$@"
