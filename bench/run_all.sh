#!/usr/bin/env bash
# Run every benchmark: prints a table, writes bench/results/latest.json.
# Usage: bench/run_all.sh [--quick] [--only NAME[,NAME...]]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY=python3
exec "$PY" -m bench "$@"
