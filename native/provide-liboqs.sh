#!/usr/bin/env bash
# Provide liboqs for the project's virtual environment (called by `make setup`).
#   native/provide-liboqs.sh PYTHON
# 1. A liboqs that is already loadable (system, conda, OQS_INSTALL_PATH) is used as it is.
# 2. Otherwise native/ builds it (build-liboqs.sh) into .venv/liboqs/default, and a .pth
#    file in the venv makes every interpreter of the venv find it with nothing exported.
set -euo pipefail
python=${1:?usage: provide-liboqs.sh PYTHON}
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

if existing=$("$python" -m pqlab.provision liboqs-locate); then
    echo "using the liboqs already installed at $existing"
    rm -f "$site/pqlab_liboqs.pth"
    exit 0
fi
"$here/build-liboqs.sh" "$python" "$root/.venv/liboqs" default
"$python" -m pqlab.provision liboqs-check "$root/.venv/liboqs/default/lib/liboqs.so"
"$python" -m pqlab.provision liboqs-pth "$site" >/dev/null
echo "liboqs ready: $root/.venv/liboqs/default (found through $site/pqlab_liboqs.pth)"
