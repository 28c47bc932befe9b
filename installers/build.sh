#!/usr/bin/env bash
# Builds Familiar's one-folder bundle with PyInstaller (installers/familiar.spec), then checks that the bundle
# runs: `--version` and `--self-test` (offscreen: store, search, offline embedding, every pane rendered).
#   Linux:  dist/familiar/ and dist/familiar-VERSION-linux-ARCH.tar.gz (the bundle, a .desktop file, the icons
#           and install-desktop-entry.sh)
#   macOS:  dist/Familiar.app and dist/Familiar-VERSION.dmg (the app and a link to /Applications)
# One command, from anywhere: installers/build.sh   (--bundle-only: skip the tarball / .dmg)
# Uses the active virtual environment, else makes build/venv. Needs Python 3.11-3.13.
set -euo pipefail
cd "$(dirname "$0")/.."
package=yes
[ "${1:-}" = "--bundle-only" ] && package=no

if [ -z "${VIRTUAL_ENV:-}" ]; then
  python3 -m venv build/venv
  . build/venv/bin/activate
fi
python -m pip install -q -e ".[bundle]"
version=$(python -c 'import app; print(app.__version__)')

rm -rf dist/familiar dist/Familiar.app
mkdir -p build
python -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath build/pyinstaller \
  installers/familiar.spec 2>&1 | tee build/pyinstaller.log
# Something the app imports that PyInstaller could not find would fail at run time: stop here instead.
if grep -E "Hidden import '?app[.'].*not found|ERROR:" build/pyinstaller.log; then
  echo "the bundle lacks a module the app loads (above)" >&2
  exit 1
fi

case "$(uname -s)" in
  Darwin) cli=dist/Familiar.app/Contents/MacOS/familiar-cli; folder=dist/Familiar.app ;;
  *) cli=dist/familiar/familiar; folder=dist/familiar ;;
esac
bounded() { if command -v timeout >/dev/null 2>&1; then timeout 600 "$@"; else "$@"; fi; }
bounded "$cli" --version
bounded "$cli" --self-test
echo "bundle: $folder, $(du -sh "$folder" | cut -f1)"
[ "$package" = yes ] || exit 0

case "$(uname -s)" in
  Darwin)
    staging=$(mktemp -d)
    cp -R dist/Familiar.app "$staging/"
    ln -s /Applications "$staging/Applications"
    hdiutil create -quiet -volname "Familiar $version" -srcfolder "$staging" -ov -format UDZO "dist/Familiar-$version.dmg"
    rm -rf "$staging"
    echo "disk image: dist/Familiar-$version.dmg, $(du -sh "dist/Familiar-$version.dmg" | cut -f1)"
    ;;
  *)
    mkdir -p dist/familiar/share/applications
    cp installers/linux/familiar.desktop dist/familiar/share/applications/
    for png in resources/icons/familiar-*.png; do
      size=${png##*-}; size=${size%.png}
      mkdir -p "dist/familiar/share/icons/hicolor/${size}x${size}/apps"
      cp "$png" "dist/familiar/share/icons/hicolor/${size}x${size}/apps/familiar.png"
    done
    cp installers/linux/install-desktop-entry.sh dist/familiar/
    tarball="dist/familiar-$version-linux-$(uname -m).tar.gz"
    tar -C dist -czf "$tarball" familiar
    echo "tarball: $tarball, $(du -sh "$tarball" | cut -f1)"
    ;;
esac
