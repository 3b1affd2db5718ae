#!/usr/bin/env bash
# Installs the pinned peer SDKs the interop tests use: the Python a2a-sdk (PyPI) into
# interop/.venv and the JavaScript @a2a-js/sdk (npm) into interop/js/node_modules.
# Idempotent: does nothing when what is installed matches the pinned lists.
set -euo pipefail
cd "$(dirname "$0")"

if ! cmp -s python/requirements.txt .venv/installed-requirements.txt 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r python/requirements.txt
  cp python/requirements.txt .venv/installed-requirements.txt
fi

if ! cmp -s js/package-lock.json js/node_modules/.installed-lock.json 2>/dev/null; then
  (cd js && npm ci --no-audit --no-fund --loglevel=error)
  cp js/package-lock.json js/node_modules/.installed-lock.json
fi
