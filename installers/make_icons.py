"""Render resources/icons/familiar.svg to every icon the platforms need, with Qt's SVG renderer.

    python installers/make_icons.py

Writes resources/icons/familiar-<size>.png (16-512: the window, the tray, Linux desktops), familiar.ico (Windows:
16-256) and familiar.icns (macOS: 16-1024). The outputs are committed, so a build needs neither this script nor
Pillow; run it again after editing the SVG (tests/ui/test_icons.py fails while the PNGs lag behind the SVG).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PIL import Image  # noqa: E402  (Pillow comes with fastembed)
from PySide6.QtGui import QGuiApplication  # noqa: E402

from app.ui.icons import ICON_SIZES, icon_file, icon_folder, render_icon  # noqa: E402

ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
ICNS_SIZES = (16, 32, 64, 128, 256, 512, 1024)


def main() -> None:
    app = QGuiApplication.instance() or QGuiApplication(sys.argv)
    assert app is not None
    folder = icon_folder()
    for size in ICON_SIZES:
        if not render_icon(size).save(str(icon_file(size))):
            raise SystemExit(f"could not write {icon_file(size)}")
    with tempfile.TemporaryDirectory() as scratch:
        rendered: dict[int, Image.Image] = {}
        for size in sorted(set(ICO_SIZES) | set(ICNS_SIZES)):
            path = Path(scratch) / f"{size}.png"
            render_icon(size).save(str(path))
            rendered[size] = Image.open(path).convert("RGBA")
            rendered[size].load()
    largest = rendered[max(ICO_SIZES)]
    largest.save(
        folder / "familiar.ico",
        sizes=[(s, s) for s in ICO_SIZES],
        append_images=[rendered[s] for s in ICO_SIZES if s != max(ICO_SIZES)],
    )
    rendered[1024].save(folder / "familiar.icns", append_images=[rendered[s] for s in ICNS_SIZES if s != 1024])
    sys.stdout.write(f"wrote {len(ICON_SIZES)} PNG sizes, familiar.ico and familiar.icns to {folder}\n")


if __name__ == "__main__":
    main()
