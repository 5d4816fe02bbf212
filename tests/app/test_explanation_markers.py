"""Every lesson's text follows its run: the sections its `explains` markers link to events are each
reached by a real run of the lesson (at 2 or 4 ranks, or a variant), the Chinese text links the same
events in the same order, and each lesson links at least two sections — so the page has a phase to
highlight in every lesson, in either language."""

from __future__ import annotations

from collections import defaultdict

from workers.lessons import LESSONS, LESSONS_DIR
from workers.lessons.explain_steps import matches, split_markers

WITHOUT_A_PROGRAM = {"script"}   # the learner's own program: no text of ours to follow it


def test_every_marked_section_is_reached_by_a_real_run_in_both_languages(every_lesson_logs):
    logs = defaultdict(list)
    for entry in every_lesson_logs:
        logs[entry["spec"][0]].extend(entry["events"])
    unreached, too_few, differ = {}, [], []
    for lesson in LESSONS.values():
        if lesson.dir.parent != LESSONS_DIR or lesson.id in WITHOUT_A_PROGRAM:
            continue
        steps = {lang: split_markers(lesson.explanation(lang))[1] for lang in ("en", "zh")}
        if [s["when"] for s in steps["en"]] != [s["when"] for s in steps["zh"]]:
            differ.append(lesson.id)
        if len(steps["en"]) < 2:
            too_few.append(lesson.id)
        missing = [s["heading"] for s in steps["en"] if not any(matches(s["when"], e) for e in logs[lesson.id])]
        if missing:
            unreached[lesson.id] = missing
    assert not unreached, f"sections no event of a real run reaches: {unreached}"
    assert not too_few, f"lessons with fewer than two linked sections: {too_few}"
    assert not differ, f"lessons whose Chinese text links other events than the English: {differ}"


def test_a_marker_matches_text_alternatives_and_prefixes():
    when = {"kind": ["compute"], "name": ["doubling step*", "F"]}
    assert matches(when, {"kind": "compute", "name": "doubling step 2"})
    assert matches(when, {"kind": "compute", "name": "F"})
    assert not matches(when, {"kind": "compute", "name": "FB"})
    assert not matches(when, {"kind": "p2p", "name": "F"})
    assert not matches(when, {"kind": "compute"})            # a field the event lacks matches nothing
