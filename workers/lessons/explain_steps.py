"""Step-linked explanations: a lesson's explain.<lang>.md says which events each of its sections explains,
so the page can highlight the section about the phase the run has reached.

A marker is an HTML comment on the line just before a `## ` heading:

    <!-- explains: kind=collective label=g forward: sum the partial outputs -->
    ## f and g: two conjugate operators

Fields are `name=value`, separated by ` ; ` when there are several; an event matches when every field
named has that value (compared as text), a value may list alternatives with `|` (`name=B|I|W`), and
a value ending in `*` stands for every text that begins with what comes before it
(`label=ring step*`). As the run goes on, the page highlights the section whose marker matches the
latest event one of them matches (the first such section, in the order of the text).
The markers are taken out of the Markdown the page renders; `split_markers` returns them as
`{"heading": the heading's text, "when": {field: [values]}}`, in the order of the text.
"""

from __future__ import annotations

import re

__all__ = ["matches", "split_markers"]

_MARKER = re.compile(r"^<!--\s*explains:\s*(?P<fields>.*?)\s*-->\s*$")
_HEADING = re.compile(r"^##\s+(?P<text>.+?)\s*$")


def _fields(text: str, line_no: int) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    for part in text.split(" ; "):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ValueError(f"explanation line {line_no}: a marker's field must read name=value, not {part!r}")
        fields[name.strip()] = [v.strip() for v in value.split("|")]
    return fields


def split_markers(markdown: str) -> tuple[str, list[dict]]:
    """The Markdown without its `explains` markers, and the markers: [{heading, when}], in order."""
    kept: list[str] = []
    steps: list[dict] = []
    pending: tuple[int, dict] | None = None
    for line_no, line in enumerate(markdown.splitlines(keepends=True), start=1):
        marker = _MARKER.match(line.strip())
        if marker:
            pending = (line_no, _fields(marker["fields"], line_no))
            continue
        if pending is not None:
            heading = _HEADING.match(line.strip())
            if not heading:
                raise ValueError(f"explanation line {pending[0]}: an `explains` marker must be followed by a `## ` heading")
            steps.append({"heading": heading["text"], "when": pending[1]})
            pending = None
        kept.append(line)
    if pending is not None:
        raise ValueError(f"explanation line {pending[0]}: an `explains` marker at the end, with no heading after it")
    return "".join(kept), steps


def matches(when: dict[str, list[str]], event: dict) -> bool:
    """Whether `event` is one a marker's `when` names (as the page decides: app/static/js/views/explanation.js)."""
    def fits(value: str, wanted: str) -> bool:
        return value.startswith(wanted[:-1]) if wanted.endswith("*") else value == wanted
    return all(field in event and any(fits(str(event[field]), w) for w in wanted) for field, wanted in when.items())
