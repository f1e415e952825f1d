#!/bin/sh
# Builds the locked "leaky" environment for screen.py: known-vulnerable releases (requirements.txt), kept in
# build/venv and never in pqlab's .venv.  The lock pins CPython 3.11 wheels.  Usage: sh build.sh
set -eu
cd "$(dirname "$0")"
python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || { echo "build.sh: python3 is $(python3 --version 2>&1); requirements.txt pins CPython 3.11 wheels" >&2; exit 1; }
python3 -m venv --clear build/venv
build/venv/bin/pip install --quiet --no-deps --require-hashes --only-binary :all: -r requirements.txt
