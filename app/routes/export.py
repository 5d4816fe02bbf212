"""A recorded run as one self-contained HTML file: `GET /api/runs/{id}/export.html`.

The file is the lesson page itself (app/templates/export.html, which extends lesson.html) with everything it
loads written into it: the stylesheets as <style>, every ES module under app/static/js as a data: URL in the
import map (so the modules' own `paralab/…` imports resolve with no server), and the run — its
description, every event, the lesson's sources, explanations and texts — as JSON that app/static/js/offline-page.js
replays, with every language's dictionary (`#paralab-dictionaries`, read by app/static/js/i18n.js). Opened from disk (file://) with no network, it replays with the same views, scrubber and keys.
"""

from __future__ import annotations

import base64
import json
import posixpath
import re

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from app import i18n
from app.deps import RunDep, RunManagerDep
from app.routes.lessons import known_choices, lesson_public
from app.routes.runs import run_public
from app.settings import STATIC_DIR
from workers.lessons import LESSONS, Lesson
from workers.lessons.explain_steps import split_markers

router = APIRouter(tags=["runs"])

_STYLESHEET = re.compile(r'<link rel="stylesheet" href="/static/([\w./-]+\.css)">')
_MODULE_SCRIPT = re.compile(r'<script type="module" src="/static/js/([\w./-]+\.js)"></script>')
_IMPORT_MAP = re.compile(r'<script type="importmap">.*?</script>', re.S)
_STYLESHEET_URL = re.compile(r'url\("(\.\./[\w./-]+)"\)')
_MEDIA_TYPES = {".woff2": "font/woff2", ".svg": "image/svg+xml", ".png": "image/png"}
_RELATIVE_IMPORT = re.compile(r'''((?:\bfrom|\bimport)\s*\(?\s*)(["'])(\.{1,2}/[^"']+)\2''')


def _stylesheet(path: str) -> str:
    """A stylesheet's text, each file it names by a relative url() (the language button's font) written
    into it as a data: URL: from file:// the browser finds no ../fonts."""
    base = posixpath.dirname(path)

    def inlined(match: re.Match) -> str:
        file = STATIC_DIR / posixpath.normpath(posixpath.join(base, match.group(1)))
        data = base64.b64encode(file.read_bytes()).decode()
        return f'url("data:{_MEDIA_TYPES[file.suffix]};base64,{data}")'
    return _STYLESHEET_URL.sub(inlined, (STATIC_DIR / path).read_text(encoding="utf-8"))


def _module_text(path: str) -> str:
    """A module's source, its relative imports (if any) rewritten to the import map's bare names."""
    text = (STATIC_DIR / "js" / path).read_text(encoding="utf-8")
    base = posixpath.dirname(path)
    return _RELATIVE_IMPORT.sub(
        lambda m: f"{m.group(1)}{m.group(2)}paralab/{posixpath.normpath(posixpath.join(base, m.group(3)))}{m.group(2)}", text)


def _import_map() -> str:
    imports = {}
    for file in sorted((STATIC_DIR / "js").rglob("*.js")):
        path = file.relative_to(STATIC_DIR / "js").as_posix()
        data = base64.b64encode(_module_text(path).encode()).decode()
        imports[f"paralab/{path}"] = f"data:text/javascript;base64,{data}"
    return json.dumps({"imports": imports}, indent=0)


def _json_script(element_id: str, value) -> str:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def self_contained(html: str, recording: dict) -> str:
    """The page with its stylesheets, modules and the recording written into it."""
    html = _STYLESHEET.sub(lambda m: f"<style>\n{_stylesheet(m.group(1))}\n</style>", html)
    html = _IMPORT_MAP.sub(lambda m: f'<script type="importmap">\n{_import_map()}\n</script>', html, count=1)
    html = _MODULE_SCRIPT.sub(lambda m: f'<script type="module">import "paralab/{m.group(1)}";</script>', html)
    dictionaries = {lang: i18n.dictionary(lang) for lang in i18n.languages()}     # every language, offline too
    scripts = f"{_json_script('paralab-recording', recording)}\n{_json_script('paralab-dictionaries', dictionaries)}"
    return html.replace("</body>", f"{scripts}\n</body>", 1)


@router.get("/api/runs/{run_id}/export.html")
async def export_run(run: RunDep, request: Request, manager: RunManagerDep, download: bool = True):
    """The run as one HTML file that replays offline, with the lesson page's views, scrubber and keys.
    `download=false` shows it in the browser instead of saving it."""
    lesson = LESSONS.get(run.lesson)
    choices = await known_choices(manager.launcher, lesson) if lesson is not None else {}
    return await run_in_threadpool(_export, run, request, manager, lesson, choices, download)   # files read, a page built


def _export(run, request: Request, manager, lesson: Lesson | None, choices: dict, download: bool) -> Response:
    if lesson is not None:
        explanations = {lang: split_markers(lesson.explanation(lang))[0] for lang in i18n.languages()}   # without its markers
        about = {**lesson_public(lesson, choices), "explanations": explanations, "explanation": explanations["en"],
                 "sources": [{"path": path, "text": text} for path, text in lesson.source_files()]}
    else:                                             # a lesson since removed: the run still replays
        about = {"id": run.lesson, "title": run.lesson, "summary": "", "params": {"properties": {}},
                 "world_sizes": [run.world_size], "sources": [], "explanation": "", "explanations": {}}
    recording = {"format": 1, "run": run_public(run).model_dump(), "lesson": about,
                 "events": manager.events_since(run, 0)}
    templates = request.app.state.templates
    page = templates.get_template("export.html").render(
        request=request, lesson=about, run=recording["run"], max_ranks=run.world_size, host="offline")
    filename = f"paralab-{run.lesson}-{run.id}.html"
    disposition = "attachment" if download else "inline"
    return Response(self_contained(page, recording), media_type="text/html; charset=utf-8",
                    headers={"Content-Disposition": f'{disposition}; filename="{filename}"'})
