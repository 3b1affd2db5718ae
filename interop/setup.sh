#!/usr/bin/env bash
# Installs the pinned peer SDKs the interop tests drive: the Python a2a-sdk (PyPI) into
# interop/.venv and the JavaScript @a2a-js/sdk (npm) into interop/js/node_modules.
# Idempotent: does nothing when the pinned versions are already there.
set -euo pipefail
cd "$(dirname "$0")"

want_py=$(sed -n 's/^a2a-sdk==//p' python/requirements.txt)
have_py=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("a2a-sdk"))' 2>/dev/null || true)
if [ "$have_py" != "$want_py" ]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r python/requirements.txt
fi

want_js=$(node -p 'require("./js/package.json").dependencies["@a2a-js/sdk"]')
have_js=$(node -p 'require("./js/node_modules/@a2a-js/sdk/package.json").version' 2>/dev/null || true)
if [ "$have_js" != "$want_js" ]; then
  (cd js && npm ci --no-audit --no-fund --loglevel=error)
fi
