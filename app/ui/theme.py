"""Every colour, font size, spacing and stylesheet of the window, for a light and a dark theme.

One `Palette` per theme (LIGHT, DARK) holds every colour the window uses; spacing and typography are the
constants below. Widgets never carry colours of their own: they call the functions here. Which theme is
in force is the application's QPalette (set by `apply_theme`, following the system's colour scheme or the
owner's choice in Settings): `colours()` answers from it, at the moment it is called.

How a change of theme reaches every widget:
- the application palette and one application stylesheet (`app_stylesheet`) are replaced;
- widgets styled with an inline stylesheet built from a palette (`dot_style(colours().ok, 12)`, or the
  older constants below, which are the LIGHT values) have that palette's colours swapped for the new
  one's (`restyle`), also when a window or dialog built for another theme first takes the focus
  (`ThemeController` watches for that);
- models and painters ask `colours()` when they paint, so a repaint is enough.
The module-level colour constants and *_STYLE strings are kept for code written against them; new code
uses `colours()` and the functions.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontDatabase, QGuiApplication, QPalette, QWindow
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from app.runtime.events import ConnectionState

_log = logging.getLogger(__name__)

# Colours that do not change with the theme: the diff's text is set with its (light) background, so a diff
# reads the same on both palettes.
# Text on the diff backgrounds: set with them, so a diff stays readable on a dark palette too.
DIFF_ADDED_TEXT = "#0b5a22"
DIFF_REMOVED_TEXT = "#9b1c14"
CONFLICT_TEXT = "#3d2a00"  # dark text on the amber hint background

ThemeChoice = Literal["system", "light", "dark"]
THEME_CHOICES: tuple[ThemeChoice, ...] = ("system", "light", "dark")
THEME_WORDS: dict[ThemeChoice, str] = {"system": "Follow the system", "light": "Light", "dark": "Dark"}


@dataclass(frozen=True, slots=True)
class Palette:
    """Every colour of one theme (lower-case #rrggbb, so stylesheets built from it can be re-coloured)."""

    name: Literal["light", "dark"]
    # the Qt palette
    window: str
    base: str
    alternate_base: str
    text: str
    button: str
    highlight: str
    highlighted_text: str
    link: str
    placeholder: str
    # meaning
    error: str
    ok: str
    amber: str
    muted: str
    hint_background: str
    hint_border: str
    familiar_line_background: str
    # a chat message's Markdown (app/ui/discord_markdown.py)
    code_background: str
    spoiler: str
    spoiler_revealed: str
    quote_bar: str
    error_background: str
    error_border: str
    notice_background: str
    notice_text: str
    notice_action: str
    diff_added: str
    diff_removed: str
    ok_background: str  # a cell in a good state (an index up to date)
    quiet_background: str  # a cell in an idle state (embeddings off)
    inherited_background: str  # a switch paused from above (its server, everywhere)
    # lorebook key chips
    chip_background: str
    chip_regex_background: str
    chip_border: str
    chip_text: str
    # navigation
    navigation_background: str
    navigation_border: str
    navigation_selected: str
    navigation_selected_text: str
    accent: str
    # scroll bars (flat: a handle on a clear track)
    scroll_handle: str
    scroll_handle_hover: str
    # the facts timeline (its selected row is `navigation_selected`, its text `text` and `muted`)
    timeline_grid: str
    timeline_row_alternate: str
    timeline_track: str
    timeline_placeholder: str
    timeline_now_line: str
    # connection states
    state_idle: str  # starting, stopped
    state_busy: str  # connecting, reconnecting
    state_connected: str
    state_failed: str

    def state_colour(self, state: ConnectionState) -> str:
        return {
            ConnectionState.STARTING: self.state_idle,
            ConnectionState.STOPPED: self.state_idle,
            ConnectionState.CONNECTING: self.state_busy,
            ConnectionState.RECONNECTING: self.state_busy,
            ConnectionState.CONNECTED: self.state_connected,
            ConnectionState.FAILED: self.state_failed,
        }[state]

    def roles(self) -> dict[str, str]:
        """Role name -> colour, for every colour of the palette."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "name"}


LIGHT = Palette(
    name="light",
    window="#f6f6f7",
    base="#ffffff",
    alternate_base="#f3f4f6",
    text="#1f1f1f",
    button="#eceef1",
    highlight="#2a5bbd",
    highlighted_text="#fefefe",
    link="#1f5bc6",
    placeholder="#6e6e6e",
    error="#b3261e",
    ok="#2a722e",
    amber="#8f5400",
    muted="#616161",
    hint_background="#fff4d6",
    hint_border="#e0b84d",
    familiar_line_background="#eef3fb",
    code_background="#e0e4ea",
    spoiler="#2b2d31",
    spoiler_revealed="#dfe2e7",
    quote_bar="#a9b0ba",
    error_background="#fdecea",
    error_border="#f5c2c0",
    notice_background="#323232",
    notice_text="#f5f5f5",
    notice_action="#8ab4f8",
    diff_added="#e6f4ea",
    diff_removed="#fce8e6",
    ok_background="#e6f4ea",
    quiet_background="#f0f0f0",
    inherited_background="#f1f1f1",
    chip_background="#eef3fb",
    chip_regex_background="#f3eefb",
    chip_border="#9fb4d6",
    chip_text="#1a2a44",
    navigation_background="#f4f4f6",
    navigation_border="#d6d6d6",
    navigation_selected="#dde6f6",
    navigation_selected_text="#000000",
    accent="#3b6fd4",
    scroll_handle="#c3c6cb",
    scroll_handle_hover="#979ba2",
    timeline_grid="#e6e8ec",
    timeline_row_alternate="#f8f9fb",
    timeline_track="#d4d8df",
    timeline_placeholder="#eceef2",
    timeline_now_line="#8a8a8a",
    state_idle="#9e9e9e",
    state_busy="#f0a202",
    state_connected="#2e9d4f",
    state_failed="#d32f2f",
)

DARK = Palette(
    name="dark",
    window="#1e1f22",
    base="#26272b",
    alternate_base="#2c2d31",
    text="#e6e6e8",
    button="#33353a",
    highlight="#3461c8",
    highlighted_text="#fffffe",
    link="#8cb6fa",
    placeholder="#9a9ca2",
    error="#f28b82",
    ok="#81c995",
    amber="#fdd663",
    muted="#b4b6bb",
    hint_background="#3b331c",
    hint_border="#8c7325",
    familiar_line_background="#243047",
    code_background="#1a1b1e",
    spoiler="#0e0f11",
    spoiler_revealed="#3c3f45",
    quote_bar="#5d6068",
    error_background="#3d2422",
    error_border="#7a3a36",
    notice_background="#e3e3e6",
    notice_text="#1d1d1f",
    notice_action="#1a57c9",
    diff_added="#1f3a29",
    diff_removed="#47231f",
    ok_background="#1f3a29",  # as diff_added: one light colour, one dark one
    quiet_background="#2e3034",
    inherited_background="#303236",
    chip_background="#243047",  # as familiar_line_background (both are #eef3fb in the light theme)
    chip_regex_background="#3a2f52",
    chip_border="#5a76a8",
    chip_text="#e8eefb",
    navigation_background="#18191b",
    navigation_border="#35373b",
    navigation_selected="#2b3a58",
    navigation_selected_text="#f4f6fb",
    accent="#7fa8f0",
    scroll_handle="#4b4e54",
    scroll_handle_hover="#6d7078",
    timeline_grid="#36383d",
    timeline_row_alternate="#2a2b2f",
    timeline_track="#484b51",
    timeline_placeholder="#3a3c42",
    timeline_now_line="#7c7f86",
    state_idle="#8f9196",
    state_busy="#f4b400",
    state_connected="#5bb974",
    state_failed="#ee675c",
)

PALETTES: dict[str, Palette] = {"light": LIGHT, "dark": DARK}
_LIGHT_ROLES: dict[str, str] = {colour: role for role, colour in reversed(LIGHT.roles().items())}

# -- spacing and typography (device-independent pixels; Qt scales them with the screen) ---------------
SPACE_XS = 4
SPACE_S = 6
SPACE_SM = 8
SPACE_M = 10
SPACE_L = 16
PANE_MARGINS = (16, 12, 16, 12)  # left, top, right, bottom of every pane
DIALOG_MARGINS = (18, 16, 18, 16)
NOTICE_MARGINS = (12, 8, 6, 8)
STATUS_BAR_MARGINS = (8, 0, 8, 0)
NAVIGATION_WIDTH = 170
TITLE_SCALE = 1.5
SMALL_SCALE = 0.9

# -- the older names: the LIGHT palette's values (kept for code written against them) ----------------
ERROR_RED = LIGHT.error
OK_GREEN = LIGHT.ok
AMBER = LIGHT.amber
MUTED_GREY = LIGHT.muted
HINT_BACKGROUND = LIGHT.hint_background
HINT_BORDER = LIGHT.hint_border
FAMILIAR_LINE_BACKGROUND = LIGHT.familiar_line_background
ERROR_BACKGROUND = LIGHT.error_background
ERROR_BORDER = LIGHT.error_border
NOTICE_BACKGROUND = LIGHT.notice_background
NOTICE_TEXT = LIGHT.notice_text
NOTICE_ACTION = LIGHT.notice_action
DIFF_ADDED = LIGHT.diff_added
DIFF_REMOVED = LIGHT.diff_removed
OK_BACKGROUND = LIGHT.ok_background
QUIET_BACKGROUND = LIGHT.quiet_background
INHERITED_BACKGROUND = LIGHT.inherited_background

STATE_COLOURS: dict[ConnectionState, str] = {state: LIGHT.state_colour(state) for state in ConnectionState}

STATE_WORDS: dict[ConnectionState, str] = {
    ConnectionState.STARTING: "Starting…",
    ConnectionState.STOPPED: "Stopped",
    ConnectionState.CONNECTING: "Connecting…",
    ConnectionState.RECONNECTING: "Reconnecting…",
    ConnectionState.CONNECTED: "Connected",
    ConnectionState.FAILED: "Failed",
}

# The "Why did it say that" pane: one hue per prompt layer (mid-tones, readable on light and dark
# backgrounds), and the highlight of the text that fired a lorebook entry (its text colour set with it).
LAYER_COLOURS: dict[str, str] = {
    "character": "#5b8def",
    "lorebook": "#d9962b",
    "summary": "#3fae74",
    "reflections": "#a873d9",
    "dossiers": "#d9665f",
    "memory": "#2fa8b8",
    "history": "#8a97a6",
}
LAYER_FALLBACK_COLOUR = "#9c8f7a"
LORE_HIGHLIGHT = "#ffd54f"
LORE_HIGHLIGHT_TEXT = "#1a1a1a"
EXPLAIN_DIFF_TEXT = "#1a1a1a"  # on DIFF_ADDED / DIFF_REMOVED, so the diff reads on a dark palette too


def layer_colour(name: str) -> QColor:
    return QColor(LAYER_COLOURS.get(name, LAYER_FALLBACK_COLOUR))


# -- which theme is in force ---------------------------------------------------------------------------
def is_dark(palette: QPalette | None = None) -> bool:
    """Whether a Qt palette (default: the application's) is a dark one."""
    palette = palette if palette is not None else QGuiApplication.palette()
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def colours() -> Palette:
    """The palette of the theme in force now (read from the application's QPalette)."""
    return DARK if is_dark() else LIGHT


def system_scheme(app: QGuiApplication, native: QPalette) -> Literal["light", "dark"]:
    """The system's colour scheme: what the platform says (Qt 6.5+), else what its palette looks like."""
    scheme = app.styleHints().colorScheme()
    if scheme == Qt.ColorScheme.Dark:
        return "dark"
    if scheme == Qt.ColorScheme.Light:
        return "light"
    return "dark" if is_dark(native) else "light"


def qt_palette(p: Palette) -> QPalette:
    """A complete Qt palette for the theme (used when the platform's own is not in that scheme)."""
    palette = QPalette()
    roles = QPalette.ColorRole
    pairs = {
        roles.Window: p.window,
        roles.WindowText: p.text,
        roles.Base: p.base,
        roles.AlternateBase: p.alternate_base,
        roles.Text: p.text,
        roles.Button: p.button,
        roles.ButtonText: p.text,
        roles.BrightText: p.error,
        roles.Highlight: p.highlight,
        roles.HighlightedText: p.highlighted_text,
        roles.Link: p.link,
        roles.LinkVisited: p.link,
        roles.ToolTipBase: p.base,
        roles.ToolTipText: p.text,
        roles.PlaceholderText: p.placeholder,
    }
    for role, colour in pairs.items():
        palette.setColor(role, QColor(colour))
    disabled = QColor(p.placeholder)
    for role in (roles.WindowText, roles.Text, roles.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    # Fusion draws frames and separators from these.
    palette.setColor(roles.Light, QColor(p.button).lighter(130))
    palette.setColor(roles.Midlight, QColor(p.button).lighter(115))
    palette.setColor(roles.Mid, QColor(p.navigation_border))
    palette.setColor(roles.Dark, QColor(p.navigation_border).darker(130))
    palette.setColor(roles.Shadow, QColor("#000000"))
    return palette


# -- stylesheets (each scoped to an object name or a property, so it styles those widgets only) --------
def navigation_style(p: Palette | None = None) -> str:
    p = p or colours()
    return (
        f"#navigation {{ border: none; border-right: 1px solid {p.navigation_border};"
        f" background: {p.navigation_background}; padding-top: 8px; outline: 0; }}"
        " #navigation::item { padding: 8px 14px; }"
        f" #navigation::item:selected {{ background: {p.navigation_selected}; color: {p.navigation_selected_text};"
        f" border-left: 3px solid {p.accent}; }}"
    )


def error_banner_style(p: Palette | None = None) -> str:
    p = p or colours()
    return (
        f"color: {p.error}; background-color: {p.error_background}; border: 1px solid {p.error_border};"
        " border-radius: 4px; padding: 6px 8px;"
    )


def setup_hint_style(p: Palette | None = None) -> str:
    p = p or colours()
    return (
        f"#setupHint {{ background-color: {p.hint_background}; border: 1px solid {p.hint_border};"
        " border-radius: 4px; }"
    )


def notice_style(p: Palette | None = None) -> str:
    p = p or colours()
    return (
        f"#notice {{ background-color: {p.notice_background}; border-radius: 6px; }}"
        f" #notice QLabel {{ color: {p.notice_text}; }}"
        f" #notice QPushButton {{ color: {p.notice_action}; background: transparent; border: none; font-weight: bold;"
        " padding: 2px 6px; }"
        " #notice QPushButton:hover { text-decoration: underline; }"
    )


def muted_style(p: Palette | None = None) -> str:
    return f"color: {(p or colours()).muted};"


NAVIGATION_STYLE = navigation_style(LIGHT)
ERROR_BANNER_STYLE = error_banner_style(LIGHT)
SETUP_HINT_STYLE = setup_hint_style(LIGHT)
NOTICE_STYLE = notice_style(LIGHT)
STATE_MESSAGE_STYLE = muted_style(LIGHT)


LOOK_CHANGE_EVENTS = frozenset((QEvent.Type.FontChange, QEvent.Type.PaletteChange, QEvent.Type.StyleChange))
"""The events a widget gets when its look changes (a theme switch, a font, a style): drawings kept of it are stale."""


def app_stylesheet(p: Palette) -> str:
    """The application-wide stylesheet: only what the Qt palette cannot say. Scroll bars are flat (a rounded
    handle on a clear track, no arrows, as in Discord): besides the look, Fusion's drew its gradients again at
    every change of a list's length, 1 ms a time (bench_ui_stall --scenario triage), a flat one 0.02 ms."""
    handle = "border-radius: 4px; margin: 2px;"
    return (
        f"QToolTip {{ color: {p.text}; background-color: {p.base}; border: 1px solid {p.navigation_border}; }}"
        " QScrollBar:vertical { background: transparent; width: 12px; margin: 0; }"
        " QScrollBar:horizontal { background: transparent; height: 12px; margin: 0; }"
        f" QScrollBar::handle:vertical {{ background: {p.scroll_handle}; min-height: 32px; {handle} }}"
        f" QScrollBar::handle:horizontal {{ background: {p.scroll_handle}; min-width: 32px; {handle} }}"
        " QScrollBar::handle:vertical:hover, QScrollBar::handle:vertical:pressed,"
        " QScrollBar::handle:horizontal:hover, QScrollBar::handle:horizontal:pressed"
        f" {{ background: {p.scroll_handle_hover}; }}"
        " QScrollBar::add-line, QScrollBar::sub-line { width: 0; height: 0; border: none; background: none; }"
        " QScrollBar::add-page, QScrollBar::sub-page { background: none; }"
    )


PAUSE_LIGHT_STYLE = (
    f"#pauseLight {{ color: {AMBER}; font-weight: bold; border: 1px solid transparent; border-radius: 3px;"
    " padding: 0 6px; }"
    f" #pauseLight:hover {{ text-decoration: underline; }}"
    f" #pauseLight:focus {{ border: 1px solid {AMBER}; }}"
)
SWITCH_HINT_STYLE = f"color: {AMBER};"
CONFLICT_STYLE = (
    f"#conflict {{ background-color: {HINT_BACKGROUND}; border: 1px solid {HINT_BORDER}; border-radius: 4px; }}"
    f" #conflict QLabel {{ color: {CONFLICT_TEXT}; }}"
)
CAUGHT_UP_STYLE = f"color: {OK_GREEN};"


def dot_style(colour: str, size: int) -> str:
    """A round coloured dot (a QLabel of `size` x `size`). A LIGHT colour (an older constant) is taken as
    its role: in the dark theme the dot gets the dark palette's colour for it."""
    return recolour(f"background-color: {colour}; border-radius: {size // 2}px;", LIGHT, colours())


def text_colour_style(colour: str) -> str:
    """Text in `colour`; a LIGHT colour (ERROR_RED, OK_GREEN...) is taken as its role in the theme in force."""
    return recolour(f"color: {colour};", LIGHT, colours())


def themed(colour: str) -> QColor:
    """A colour for painting now: a LIGHT palette colour (an older constant: AMBER, OK_GREEN, MUTED_GREY...)
    as its role's colour in the theme in force; any other colour as it is."""
    p = colours()
    if p is not LIGHT:
        role = _LIGHT_ROLES.get(colour.lower())
        if role is not None:
            return QColor(getattr(p, role))
    return QColor(colour)


def readable_on(background: str) -> str:
    """Dark or white text, whichever reads better on `background` (a status chip's colour)."""
    dark, white = QColor("#1a1a1a"), QColor("#ffffff")
    fill = QColor(background)
    return "#1a1a1a" if contrast_ratio(dark, fill) >= contrast_ratio(white, fill) else "#ffffff"


def relative_luminance(colour: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())


def contrast_ratio(a: QColor, b: QColor) -> float:
    """The WCAG contrast ratio of two opaque colours (1 to 21; 4.5 is the AA level for normal text)."""
    light, dark = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


AA_CONTRAST = 4.5


def readable_palette(native: QPalette, p: Palette) -> QPalette:
    """The platform's own palette, kept for its look, with each text role that does not reach AA contrast
    on its background (Qt's own default selection: white on #308cc6, 3.7) taken from the theme instead."""
    palette = QPalette(native)
    roles = QPalette.ColorRole
    pairs = (
        (roles.Highlight, roles.HighlightedText, p.highlight, p.highlighted_text),
        (roles.Base, roles.Text, p.base, p.text),
        (roles.Window, roles.WindowText, p.window, p.text),
        (roles.Button, roles.ButtonText, p.button, p.text),
        (roles.Base, roles.PlaceholderText, p.base, p.placeholder),
        (roles.ToolTipBase, roles.ToolTipText, p.base, p.text),
    )
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        for background, text, ours_background, ours_text in pairs:
            if contrast_ratio(palette.color(group, background), palette.color(group, text)) >= AA_CONTRAST:
                continue
            if contrast_ratio(palette.color(group, background), QColor(ours_text)) >= AA_CONTRAST:
                palette.setColor(group, text, QColor(ours_text))
            else:
                palette.setColor(group, background, QColor(ours_background))
                palette.setColor(group, text, QColor(ours_text))
    return palette


def error_colour() -> QColor:
    return QColor(colours().error)


def monospace_font() -> QFont:
    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def title_label(text: str) -> QLabel:
    """A pane title: larger and bold."""
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * TITLE_SCALE)
    font.setBold(True)
    label.setFont(font)
    return label


class _Caption(QLabel):
    """A label with a few pixels to spare after its text: the paint engine draws some texts a pixel or two
    wider than Qt measures them, and a label sized to its measure lost its last letter ("Temperatur")."""

    SPARE = 4

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(hint.width() + self.SPARE, hint.height())

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(hint.width() + self.SPARE, hint.height())


def caption(text: str) -> QLabel:
    """A form row's caption ("&Temperature"): its whole text always shows."""
    return _Caption(text)


def section_label(text: str) -> QLabel:
    """A heading inside a pane: bold, normal size."""
    label = QLabel(text)
    font = label.font()
    font.setBold(True)
    label.setFont(font)
    return label


def small_label(text: str) -> QLabel:
    """Explanatory small print, muted and word-wrapped."""
    label = QLabel(text)
    font = label.font()
    font.setPointSizeF(font.pointSizeF() * SMALL_SCALE)
    label.setFont(font)
    label.setWordWrap(True)
    label.setStyleSheet(muted_style())
    return label


# -- the facts timeline ------------------------------------------------------------------------------
# Its background, rows, grid, track and text are palette roles (timeline_*, navigation_selected, text,
# muted). The statuses' colours and the world-time line are mid-tones that read on both themes'
# backgrounds (white text on them too), so a bar keeps its colour when the theme changes.
TIMELINE_STATUS_COLOURS = {
    "active": "#3b6fd4",
    "pending": "#e09b1a",
    "archived": "#8d96a3",
    "rejected": "#d0675d",
    "forgotten": "#b4b4c0",
}
TIMELINE_WORLD_CURSOR = "#c9412a"  # the world time the slice is taken at
TIMELINE_RECORDED_B = "#7a4fc4"  # the second recorded time when comparing
TIMELINE_CHIP_STYLE = "border-radius: 8px; padding: 1px 8px; color: {text}; background-color: {colour};"


def status_colour(status: str) -> QColor:
    """The colour a fact's status is drawn in on the timeline (bars, chips, dots)."""
    return QColor(TIMELINE_STATUS_COLOURS.get(status, MUTED_GREY))


def status_chip_style(status: str) -> str:
    """A small rounded label in the status's colour, its text dark or white, whichever reads on it."""
    colour = TIMELINE_STATUS_COLOURS.get(status, MUTED_GREY)
    return TIMELINE_CHIP_STYLE.format(colour=colour, text=readable_on(colour))


def chip_style(p: Palette | None = None, *, regex: bool = False) -> str:
    """A lorebook key chip (a QToolButton): its text on a pale (light theme) or deep (dark) pill."""
    p = p or colours()
    background = p.chip_regex_background if regex else p.chip_background
    return (
        f"QToolButton {{ color: {p.chip_text}; border: 1px solid {p.chip_border}; border-radius: 9px;"
        f" background: {background}; padding: 1px 6px; }}"
        f" QToolButton:focus {{ border: 2px solid {p.accent}; }}"
    )


def scaled_font(font: QFont, factor: float, *, bold: bool = False) -> QFont:
    """`font` scaled by `factor` (e.g. a fact's text, large enough to read at a glance)."""
    scaled = QFont(font)
    scaled.setPointSizeF(font.pointSizeF() * factor)
    scaled.setBold(bold)
    return scaled


# -- re-colouring --------------------------------------------------------------------------------------
def recolour(sheet: str, old: Palette, new: Palette) -> str:
    """`sheet` with each colour of `old` replaced by the same role's colour in `new`."""
    if not sheet or old is new:
        return sheet
    lowered = sheet.lower()
    swaps = {o: new_colour for o, new_colour in zip(old.roles().values(), new.roles().values(), strict=True)}
    if not any(colour in lowered for colour in swaps):
        return sheet
    out: list[str] = []
    i = 0
    while i < len(sheet):  # one pass, so a swapped colour is never swapped again
        chunk = lowered[i : i + 7]
        if chunk in swaps:
            out.append(swaps[chunk])
            i += 7
        else:
            out.append(sheet[i])
            i += 1
    return "".join(out)


def restyle(widgets: list[QWidget], p: Palette) -> None:
    """Give each widget's own stylesheet the colours of `p` (from whichever palette it was built with)."""
    for widget in widgets:
        sheet = widget.styleSheet()
        if not sheet:
            continue
        updated = sheet
        for other in PALETTES.values():
            if other is not p:
                updated = recolour(updated, other, p)
        if updated != sheet:
            widget.setStyleSheet(updated)


class ThemeController(QObject):
    """Applies the owner's theme choice to the application, follows the system's colour scheme while the
    choice is "system", and re-colours windows shown later. Emits `changed` with the palette in force."""

    changed = Signal(object)

    def __init__(
        self,
        app: QApplication,
        choice: ThemeChoice = "system",
        *,
        system: Callable[[], Literal["light", "dark"]] | None = None,
    ) -> None:
        """`system`: what the system's colour scheme is now (default: Qt's style hints, else the native palette)."""
        super().__init__(app)
        self._app = app
        self._native = QPalette(app.palette())  # the platform's own, kept for the scheme it is in
        self._native_style = app.style().name()
        self._choice: ThemeChoice = choice
        self._system = system or (lambda: system_scheme(app, self._native))
        self._palette: Palette | None = None
        self._focused: QWindow | None = None  # the window that has the focus, as last looked over
        app.styleHints().colorSchemeChanged.connect(self._on_system_scheme_changed)
        app.focusWindowChanged.connect(self._on_focus_window_changed)
        self.apply(choice)

    @property
    def choice(self) -> ThemeChoice:
        return self._choice

    @property
    def palette(self) -> Palette:
        return self._palette or colours()

    def apply(self, choice: ThemeChoice) -> Palette:
        """Put `choice` in force now (light, dark, or the system's scheme)."""
        self._choice = choice
        wanted = PALETTES[self._system() if choice == "system" else choice]
        if is_dark(self._native) == (wanted is DARK):
            # The platform's own palette is in that scheme: keep its native look.
            self._set_style(self._native_style)
            self._app.setPalette(readable_palette(self._native, wanted))
        else:
            self._set_style("Fusion")  # the one style that draws any palette faithfully (Windows' does not)
            self._app.setPalette(qt_palette(wanted))
        self._app.setStyleSheet(app_stylesheet(wanted))
        self._palette = wanted
        restyle(QApplication.allWidgets(), wanted)
        _log.info("theme: %s (%s)", wanted.name, choice)
        self.changed.emit(wanted)
        return wanted

    def _set_style(self, name: str) -> None:
        if self._app.style().name().lower() != name.lower():
            self._app.setStyle(name)

    def _on_system_scheme_changed(self) -> None:
        if self._choice == "system":
            self.apply("system")

    def _on_focus_window_changed(self, window: QWindow | None) -> None:
        # A window or dialog built with another palette's colours (an older constant) is re-coloured when it
        # takes the focus (cheaper than watching every event for a Show). Not a menu or a combo's list (nothing
        # in them is built with those colours), nor the window the focus comes back to from one: a snooze menu
        # opened and closed went over every widget of the window twice, ~1 ms each (bench_ui_stall triage).
        if window is None:
            self._focused = None  # the application lost the focus: the window that takes it next is looked over
            return
        if window.type() in (Qt.WindowType.Popup, Qt.WindowType.ToolTip):
            return
        if window is self._focused:
            return
        self._focused = window
        if self._palette is None or self._palette is LIGHT:
            return
        for widget in QApplication.topLevelWidgets():
            if widget.windowHandle() is window:
                restyle([widget, *widget.findChildren(QWidget)], self._palette)
