#!/bin/sh
# Builds the locked "leaky" environment for screen.py: known-vulnerable releases (requirements.txt), kept in
# build/venv and never in pqlab's .venv.  The lock pins CPython 3.11 wheels.  Usage: sh build.sh
# (pqlab runs it on first need: program.toml, native/PROTOCOL.md).
set -eu
cd "$(dirname "$0")"
python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || { echo "build.sh: python3 is $(python3 --version 2>&1); requirements.txt pins CPython 3.11 wheels" >&2; exit 1; }
# A fresh environment, but pqlab's files beside the interpreter stay: the build lock it holds now, the build
# record (with its history) and the log (venv --clear would delete them).
if [ -d build/venv ]; then
    find build/venv -mindepth 1 -maxdepth 1 ! -name bin -exec rm -rf {} +
    find build/venv/bin -mindepth 1 -maxdepth 1 ! -name .lock ! -name pqlab-build.json ! -name build.log \
        -exec rm -rf {} +
fi
# --copies: build/venv/bin/python is a file, not a link to the interpreter it was made from (pqlab hashes it
# and keeps its build record beside it)
python3 -m venv --copies build/venv
build/venv/bin/pip install --quiet --no-deps --require-hashes --only-binary :all: -r requirements.txt
