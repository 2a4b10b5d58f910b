"""Every text colour of static/inbox/app.css is readable on the backgrounds it sits on: WCAG 2
contrast of at least 4.5:1 (the level AA for normal text).

The stylesheet is parsed, its custom properties resolved, and each rule's text colour checked:
against its own background when the rule sets one, otherwise against every surface of the page
(the light backgrounds that rules set without a text colour of their own: panels, rows,
cards, bubbles) or, for the dark top bar and toasts, against their dark background. A colour someone
adds or lightens later fails here, not in a manager's eyes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSS = Path(__file__).resolve().parents[3] / "static" / "inbox" / "app.css"
MINIMUM = 4.5
DARK_BASE = "#102a27"  # the top bar, the phone menu and the toasts
DARK_CONTEXT = re.compile(
    r"\.(topbar|topnav|brand|who|toast|live-status|sound-toggle|site-menu|menu-button)"
)
# Coloured glyphs that are not text: their meaning is also in the words beside them.
DECORATIVE = {".brand-mark", ".health::before", ".health-ok::before", ".health-idle::before",
              ".health-warn::before", ".dots i"}  # fmt: skip

Colour = tuple[float, float, float, float]


def parse_colour(value: str, variables: dict[str, str]) -> Colour | None:
    value = value.strip()
    match = re.fullmatch(r"var\((--[\w-]+)\)", value)
    if match:
        return parse_colour(variables.get(match.group(1), ""), variables)
    if value in ("#fff", "white"):
        value = "#ffffff"
    match = re.fullmatch(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})", value)
    if match:
        digits = match.group(1)
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        r, g, b = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
        return (r, g, b, 1.0)
    match = re.fullmatch(r"rgba?\(([^)]*)\)", value)
    if match:
        parts = [float(p) for p in re.split(r"[\s,/]+", match.group(1).strip()) if p]
        return (parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else 1.0)
    return None


def over(top: Colour, base: Colour) -> Colour:
    """`top` painted over an opaque `base` (alpha compositing)."""
    a = top[3]
    return (*(top[i] * a + base[i] * (1 - a) for i in range(3)), 1.0)  # type: ignore[return-value]


def luminance(colour: Colour) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""

    def channel(c: float) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in colour[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(text: Colour, background: Colour) -> float:
    """(L1 + 0.05) / (L2 + 0.05), the lighter over the darker; text blended onto the background."""
    text = over(text, background)
    light, dark = sorted((luminance(text), luminance(background)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def rules(css: str) -> list[tuple[str, dict[str, str]]]:
    """(selector, declarations) for every plain rule, those inside @media included."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    css = re.sub(r"@keyframes[^{]*\{(?:[^{}]*\{[^}]*\})*\s*\}", "", css)
    css = re.sub(r"@media[^{]*\{", "", css)  # its rules stay, its closing brace is dropped below
    found = []
    for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        declarations = {}
        for part in body.split(";"):
            if ":" in part:
                name, value = part.split(":", 1)
                declarations[name.strip()] = value.replace("!important", "").strip()
        for single in selector.split(","):
            found.append((single.strip(), declarations))
    return found


def background_of(declarations: dict[str, str], variables: dict[str, str]) -> Colour | None:
    for name in ("background-color", "background"):
        if name in declarations:
            return parse_colour(declarations[name], variables)
    return None


def pairs(css: str) -> list[tuple[str, Colour, Colour]]:
    """(selector, text colour, background) for every text colour and background it can sit on."""
    parsed = rules(css)
    variables = {
        k: v for s, d in parsed if s == ":root" for k, v in d.items() if k.startswith("--")
    }
    white = (255.0, 255.0, 255.0, 1.0)
    dark = parse_colour(DARK_BASE, variables)
    assert dark is not None
    light_surfaces: dict[str, Colour] = {"white": white}
    for selector, declarations in parsed:
        background = background_of(declarations, variables)
        if background is None or "color" in declarations or DARK_CONTEXT.search(selector):
            continue
        if selector in DECORATIVE or luminance(over(background, white)) < 0.5:
            continue  # a dot, or a dark button whose own rule pairs it with light text
        light_surfaces[selector] = over(background, white)
    found = []
    for selector, declarations in parsed:
        if "color" not in declarations or selector in DECORATIVE:
            continue
        text = parse_colour(declarations["color"], variables)
        if text is None:
            continue  # inherit, currentColor
        base = dark if DARK_CONTEXT.search(selector) else white
        own = background_of(declarations, variables)
        if own is not None and own[3] > 0:
            found.append((selector, text, over(own, base)))
        elif DARK_CONTEXT.search(selector):
            found.append((selector, text, dark))
        else:
            found.extend(
                (f"{selector} on {where}", text, bg) for where, bg in light_surfaces.items()
            )
    return found


def test_the_formula_gives_wcag_reference_values() -> None:
    black, white = (0.0, 0.0, 0.0, 1.0), (255.0, 255.0, 255.0, 1.0)
    assert contrast(black, white) == pytest.approx(21.0)
    assert contrast(white, white) == pytest.approx(1.0)
    # #767676 on white is the classic lightest grey that passes AA: 4.54:1.
    assert contrast((118.0, 118.0, 118.0, 1.0), white) == pytest.approx(4.54, abs=0.01)


def test_a_too_light_colour_fails() -> None:
    css = ":root { --muted: #8a94a0; --panel: #ffffff; } .card { background: var(--panel); }\n"
    css += ".hint { color: var(--muted); }"
    worst = min(contrast(text, bg) for _, text, bg in pairs(css))
    assert worst < MINIMUM


def test_every_text_colour_of_the_stylesheet_reaches_4_5_to_1() -> None:
    found = pairs(CSS.read_text())
    assert len(found) > 100, "the stylesheet parser found too few colour pairs"
    failing = sorted(
        f"{selector}: {contrast(text, bg):.2f}:1"
        for selector, text, bg in found
        if contrast(text, bg) < MINIMUM
    )
    assert failing == []
