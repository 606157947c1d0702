"""The admin console's charts, drawn on the server as SVG (no chart library, no script, no style).

Each chart is a standalone SVG document made only of shapes and text with presentation attributes
(no ``style`` attribute, nothing executable), so the console can place it in a page whose
Content-Security-Policy forbids inline styles and scripts. Text goes through ElementTree, which
escapes it: a question or reason can never become markup. Their words are in the language asked for
(the console's); the data on them (days, reason codes, counts) is as stored.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..i18n import SOURCE_LANGUAGE, translate

ANSWERED = "#4f46e5"
REFUSED = "#f59e0b"
INK = "#1f2937"
GRID = "#e5e7eb"
WIDTH = 640


def _svg(height: int, label: str) -> ET.Element:
    svg = ET.Element(
        "svg",
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {WIDTH} {height}",
        width=str(WIDTH),
        height=str(height),
        role="img",
        **{"aria-label": label},
    )
    ET.SubElement(svg, "title").text = label
    return svg


def _text(parent: ET.Element, x: float, y: float, text: str, anchor: str = "start", size: int = 12) -> None:
    ET.SubElement(
        parent, "text", x=f"{x:.1f}", y=f"{y:.1f}", fill=INK, **{"font-size": str(size), "text-anchor": anchor, "font-family": "sans-serif"}
    ).text = text


def _rect(parent: ET.Element, x: float, y: float, w: float, h: float, fill: str, title: str) -> None:
    rect = ET.SubElement(parent, "rect", x=f"{x:.1f}", y=f"{y:.1f}", width=f"{max(w, 0):.1f}", height=f"{max(h, 0):.1f}", fill=fill)
    ET.SubElement(rect, "title").text = title


def per_day_chart(per_day: list[dict], language: str = SOURCE_LANGUAGE) -> str:
    """Stacked bars: answered and refused questions per day."""
    height, top, bottom, left = 220, 24, 36, 40
    total = sum(d["questions"] for d in per_day)
    svg = _svg(height, translate(language, "Questions per day: {total} in {days} day(s), answered and refused", total=total, days=len(per_day)))
    peak = max((d["questions"] for d in per_day), default=0) or 1
    plot_h = height - top - bottom
    ET.SubElement(svg, "line", x1=str(left), y1=str(height - bottom), x2=str(WIDTH), y2=str(height - bottom), stroke=GRID)
    _text(svg, left - 6, top + 4, str(peak), "end")
    _text(svg, left - 6, height - bottom, "0", "end")
    answered, refused = translate(language, "answered"), translate(language, "refused")
    _rect(svg, WIDTH - 170, 4, 10, 10, ANSWERED, answered)
    _text(svg, WIDTH - 155, 13, answered)
    _rect(svg, WIDTH - 85, 4, 10, 10, REFUSED, refused)
    _text(svg, WIDTH - 70, 13, refused)
    if not per_day:
        _text(svg, WIDTH / 2, height / 2, translate(language, "no questions in this range"), "middle")
        return ET.tostring(svg, encoding="unicode")
    slot = (WIDTH - left) / len(per_day)
    bar = max(2.0, min(40.0, slot * 0.7))
    every = max(1, len(per_day) // 8)  # at most about eight date labels
    for i, day in enumerate(per_day):
        x = left + i * slot + (slot - bar) / 2
        answered_h = plot_h * day["answered"] / peak
        refused_h = plot_h * day["refused"] / peak
        base = height - bottom
        _rect(svg, x, base - answered_h, bar, answered_h, ANSWERED, translate(language, "{day}: {count} answered", day=day["day"], count=day["answered"]))
        _rect(svg, x, base - answered_h - refused_h, bar, refused_h, REFUSED, translate(language, "{day}: {count} refused", day=day["day"], count=day["refused"]))
        if i % every == 0:
            _text(svg, x + bar / 2, height - bottom + 16, day["day"][5:], "middle", 11)
    return ET.tostring(svg, encoding="unicode")


def reasons_chart(reasons: dict[str, int], language: str = SOURCE_LANGUAGE) -> str:
    """Horizontal bars: refusals by reason."""
    row, left = 26, 210
    height = max(60, 20 + row * len(reasons))
    counted = ", ".join(f"{r} {n}" for r, n in reasons.items()) or translate(language, "none")
    svg = _svg(height, translate(language, "Refusals by reason: {reasons}", reasons=counted))
    if not reasons:
        _text(svg, WIDTH / 2, height / 2, translate(language, "no refusals in this range"), "middle")
        return ET.tostring(svg, encoding="unicode")
    peak = max(reasons.values())
    for i, (reason, count) in enumerate(reasons.items()):
        y = 10 + i * row
        _text(svg, left - 8, y + 14, reason.replace("_", " "), "end")
        width = (WIDTH - left - 50) * count / peak
        _rect(svg, left, y + 2, width, row - 8, REFUSED, f"{reason}: {count}")
        _text(svg, left + width + 6, y + 14, str(count))
    return ET.tostring(svg, encoding="unicode")


def insights_charts(report: dict, language: str = SOURCE_LANGUAGE) -> dict[str, str]:
    """The insights' two charts, their words in ``language`` (a code of ``i18n.LANGUAGES``)."""
    return {
        "per_day": per_day_chart(report["per_day"], language),
        "refusals": reasons_chart(report["refused_by_reason"], language),
    }
