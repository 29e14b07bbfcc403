#!/usr/bin/env bash
# Build the sdist and wheel, twine-check them, install the wheel into a fresh venv and consume from a local cluster with it.
# The cluster is the wheel's own zkconsumer.testing, on the jars of the checkout (ZKCONSUMER_JARS, else .jars/).
# PY (default .venv/bin/python) reads its state file; BUILD_PY (default PY) has build and twine
# (the dev extra); PYTHON (default python3) makes the fresh venv. SMOKE_MESSAGES sets N (default 1000).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
BUILD_PY="${BUILD_PY:-$PY}"
N="${SMOKE_MESSAGES:-1000}"
work="$(mktemp -d -t zkconsumer-wheel-smoke-XXXXXX)"
log="$work/smoke.log"
step="start"

finish() {
  local rc=$?
  [ -f "$work/cluster/state.json" ] && { cluster down >>"$log" 2>&1 || true; }
  if [ $rc -ne 0 ]; then
    echo "wheel_smoke=FAILED at step '$step' (exit $rc); last lines of $log:" >&2
    tail -n 40 "$log" >&2
    rm -rf "$work/venv"  # keeps the logs (the cluster's under cluster/run) and the built files
  else
    rm -rf "$work"
  fi
  exit $rc
}
trap finish EXIT

run() {  # run <step> <command...>: output to the log; exits on failure (outside the redirection)
  step="$1"
  shift
  echo "== $step: $*" >>"$log"
  "$@" >>"$log" 2>&1 || exit
}
cluster() {  # the installed package's local cluster (python -m zkconsumer.testing up|down), on the checkout's jars
  fresh env ZKCONSUMER_CLUSTER_DIR="$work/cluster" ZKCONSUMER_JARS="${ZKCONSUMER_JARS:-$ROOT/.jars}" \
    python -m zkconsumer.testing "$@"
}
build() {  # from a copy of the committed tree: nothing (build/, *.egg-info) is left in the checkout
  mkdir -p "$work/src" && git -C "$ROOT" archive HEAD | tar -x -C "$work/src"
  (cd "$work/src" && "$BUILD_PY" -m build --outdir "$work/dist" .)
}
fresh() {  # a command in the fresh venv, away from the checkout: no PYTHONPATH, cwd outside the repo
  (cd "$work" && env -u PYTHONPATH PYTHONNOUSERSITE=1 PATH="$work/venv/bin:$PATH" "$@")
}

run build build
wheel="$(basename "$(ls "$work"/dist/*.whl)")"
run twine-check "$BUILD_PY" -m twine check --strict "$work"/dist/*
run venv "${PYTHON:-python3}" -m venv "$work/venv"
run install fresh timeout 900 python -m pip install --no-input --disable-pip-version-check "$work/dist/$wheel"
run import fresh python -c "import zkconsumer, sys; assert zkconsumer.__file__.startswith(sys.prefix), zkconsumer.__file__"
run cli-help fresh zkconsumer --help
# The Spark source lives in zkconsumer.spark (no top-level package of ours besides zkconsumer), and
# without the [spark] extra importing it names the extra.
run top-level fresh python -c "import zipfile, sys; tops = {n.split('/')[0] for n in zipfile.ZipFile(sys.argv[1]).namelist()}; assert {t for t in tops if not t.endswith('.dist-info')} == {'zkconsumer'}, tops" "$work/dist/$wheel"
run spark-extra fresh python -c "
try:
    import zkconsumer.spark
except ImportError as exc:
    assert 'zkconsumer[spark]' in str(exc), exc
else:
    raise AssertionError('zkconsumer.spark imported without pyspark')"
run cluster-up cluster up --chroot /smoke
read -r zookeeper bootstrap < <("$PY" -c 'import json, sys; s = json.load(open(sys.argv[1]))
print(s["zookeeper_connect"], s["bootstrap_servers"])' "$work/cluster/state.json")
cp "$ROOT/scripts/wheel_smoke_consumer.py" "$work/"
run consume fresh python wheel_smoke_consumer.py "$zookeeper" "$bootstrap" "$N" "$work/venv"
step=check
grep -q "^consumed $N " "$log"
echo "wheel_smoke=ok wheel=$wheel messages=$N"
