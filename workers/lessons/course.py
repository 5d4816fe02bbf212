"""The lessons as a course: parts in teaching order, and what to know before each lesson. Torch-free
(the index page reads it). A lesson the course does not name (one from PARALAB_LESSONS_PATH) is listed
after the course, under "More lessons"; a name here that is not installed is left out."""

from __future__ import annotations

from workers.lessons import LESSONS, Lesson

PARTS: list[tuple[str, str, tuple[str, ...]]] = [   # (title, what the part is about, its lessons in order)
    ("Foundations", "the collectives everything else is made of, and how a job hangs",
     ("collectives", "ring_allreduce", "deadlock")),
    ("Data", "every rank a copy of the model, each its own slice of the batch",
     ("dp", "zero", "fsdp2")),
    ("Model", "one layer's weights split across ranks",
     ("tp_mlp", "sp_mlp", "tp_attention", "dtensor")),
    ("Sequence", "a sequence too long for one rank", ("context_parallel",)),
    ("Pipeline", "the layers in stages, microbatches flowing through", ("pp",)),
    ("Experts", "a mixture of experts spread over the ranks", ("expert_parallel",)),
    ("Together", "all of them in one training step", ("three_d",)),
    ("Your own", "any torch.distributed program, traced as the lessons are (also: the playground)", ("script",)),
]

KNOW_FIRST: dict[str, tuple[str, ...]] = {
    "ring_allreduce": ("collectives",), "deadlock": ("collectives",),
    "dp": ("collectives",), "zero": ("dp",), "fsdp2": ("zero",),
    "tp_mlp": ("collectives",), "sp_mlp": ("tp_mlp",), "tp_attention": ("tp_mlp",), "dtensor": ("tp_mlp", "sp_mlp"),
    "context_parallel": ("ring_allreduce", "tp_attention"),
    "pp": ("collectives",),
    "expert_parallel": ("collectives", "tp_mlp"),
    "three_d": ("tp_mlp", "pp", "dp"),
    "script": ("collectives", "deadlock"),
}


def course(lessons: dict[str, Lesson] = LESSONS) -> list[dict]:
    """[{title, about, lessons: [{lesson, know_first: [Lesson]}]}] for the installed lessons, in order."""
    def entry(lesson_id: str) -> dict:
        return {"lesson": lessons[lesson_id],
                "know_first": [lessons[first] for first in KNOW_FIRST.get(lesson_id, ()) if first in lessons]}

    parts = [{"title": title, "about": about, "lessons": [entry(i) for i in ids if i in lessons]}
             for title, about, ids in PARTS]
    named = {i for _, _, ids in PARTS for i in ids}
    more = [entry(i) for i in lessons if i not in named]
    if more:
        parts.append({"title": "More lessons", "about": "installed beside the course", "lessons": more})
    return [part for part in parts if part["lessons"]]
