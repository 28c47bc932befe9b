#!/bin/sh
# Adds Familiar to your desktop's application menu (for you only; no root needed):
# ~/.local/share/applications/familiar.desktop, pointing at the `familiar` beside this script, and the icon in
# ~/.local/share/icons/hicolor. Run it again after moving the folder; --remove takes both away.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
entry="$data/applications/familiar.desktop"
if [ "${1:-}" = "--remove" ]; then
  rm -f "$entry"
  for png in "$here"/share/icons/hicolor/*/apps/familiar.png; do
    size=$(basename "$(dirname "$(dirname "$png")")")
    rm -f "$data/icons/hicolor/$size/apps/familiar.png"
  done
  echo "removed $entry and the icons"
  exit 0
fi
mkdir -p "$data/applications"
for png in "$here"/share/icons/hicolor/*/apps/familiar.png; do
  size=$(basename "$(dirname "$(dirname "$png")")")
  mkdir -p "$data/icons/hicolor/$size/apps"
  cp "$png" "$data/icons/hicolor/$size/apps/familiar.png"
done
sed "s|^Exec=familiar$|Exec=\"$here/familiar\"|" "$here/share/applications/familiar.desktop" > "$entry.tmp"
mv "$entry.tmp" "$entry"
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$data/applications" || true
command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$data/icons/hicolor" || true
echo "Familiar is in your application menu ($entry)"
