"""Request and response bodies, named by direction."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class LessonPublic(BaseModel):
    id: str
    title: str
    summary: str
    params: dict[str, Any] = Field(description="JSON schema of the lesson's parameters")
    world_sizes: list[int]
    default_world_size: int = Field(description="the world size the page offers first: the default parameters fit it")
    defaults_by_world_size: dict[str, dict[str, Any]] = Field(default_factory=dict, description=(
        "{world size: {parameter: default}}: defaults that depend on the number of ranks, over the schema's "
        "(3D parallelism's tp, pp, dp); a run that omits them gets them"))
    texts: dict[str, dict[str, Any]] = Field(default_factory=dict, description=(
        "{lang: the lesson's texts.<lang>.json}: its title, summary, parameter help and event strings "
        "translated (docs/i18n.md)"))


class LessonDetail(LessonPublic):
    sources: list[dict[str, str]] = Field(description="[{path, text}] of the files the page shows")
    explanation: str = Field(description="the lesson's text, Markdown")
    explanation_steps: list[dict] = Field(default_factory=list, description=(
        "which events each section explains: [{heading, when: {field: [values]}}] (docs/lessons.md)"))


class RunCreate(BaseModel):
    """Unknown fields are refused (a misspelt `step` must not silently start a free-running run)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    lesson: str = Field(max_length=64, description="a lesson id from GET /api/lessons")
    world_size: int = Field(le=1024, description="number of ranks")
    params: dict[str, Any] = Field(default_factory=dict, description="the lesson's parameters")
    step: bool = Field(False, description="pause every rank before each collective (step mode)")
    hang_timeout_s: float | None = Field(None, gt=0, le=600, description=(
        "seconds without progress inside a collective before the run is reported hung "
        "(default: the server's; a lesson's own `timeout_s` parameter wins)"))
    placement: str | None = Field(None, max_length=16, description=(
        "on a Ray cluster (`--cluster`), where the ranks go: `pack` (as few nodes as may be) or `spread` "
        "(across nodes); consecutive ranks share a node either way (default: pack)"))


class RunPublic(BaseModel):
    id: str
    lesson: str
    world_size: int
    params: dict[str, Any]
    step: bool
    backend: str
    status: str
    position: int | None = Field(None, description="while queued, its place in the queue (1: next to start)")
    error: dict[str, Any] | None
    created_at: float
    hang_timeout_s: float | None = Field(None, description="seconds without progress inside a call before the run is called hung")
    placement: str | None = Field(None, description="on a Ray cluster: pack or spread (docs/cluster.md)")
    events: int = Field(description="number of events recorded so far")
    checks: list[dict[str, Any]]
    metrics: list[dict[str, Any]]
