#!/usr/bin/env bash
# Builds dist/familiar/ (a one-folder bundle) with PyInstaller, then checks it starts.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q . "pyinstaller>=6.10,<7"
pyinstaller --noconfirm --distpath dist --workpath build/pyinstaller installers/familiar.spec
./dist/familiar/familiar --version
