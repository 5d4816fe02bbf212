"""Lessons `tp_mlp` and `sp_mlp` on the live server: each rank's saved activations, measured with
saved-tensor hooks, term by term against Korthikanti et al.'s per-layer formula for this block
(LayerNorm + MLP, float32, b = 1, no dropout), with and without sequence parallelism — recomputed
here from s, h, f and t. The one place this block differs from the paper: with SP, its W1 keeps the
whole gathered input (sbh), where the paper keeps the shard (sbh/t) and gathers again in backward."""

from __future__ import annotations

import pytest

from tests.app.helpers import run_all

S, H, F = 8, 16, 64                                  # the lessons' defaults: seq_len, hidden, ffn
WORLDS = (1, 2, 4)
TERMS = ("ln_input", "ln_stats", "w1_input", "gelu_input", "w2_input")


@pytest.fixture(scope="module")
def finished(server) -> dict[tuple[str, int], dict]:
    specs = [(lesson, t, {}) for lesson in ("tp_mlp", "sp_mlp") for t in WORLDS]
    return {(lesson, t): result["run"] for (lesson, t, _), result in zip(specs, run_all(server, specs))}


def block_elements(t: int, sp: bool) -> dict[str, int]:
    """What each rank saves: LayerNorm's input and its mean and 1/σ (one each per token), the input of
    W1 (the whole sequence in both lessons), GELU's input and W2's input (this rank's FFN slice)."""
    tokens = S // t if sp else S
    return {"ln_input": tokens * H, "ln_stats": 2 * tokens, "w1_input": S * H,
            "gelu_input": S * F // t, "w2_input": S * F // t}


def paper_elements(t: int, sp: bool) -> dict[str, int]:
    """Korthikanti et al., section 4: sbh for LayerNorm's and W1's inputs (both /t with SP), 4sbh/t
    for GELU's and W2's (f = 4h there; f here); no LayerNorm statistics."""
    shard = t if sp else 1
    return {"ln_input": S * H // shard, "w1_input": S * H // shard, "gelu_input": S * F // t, "w2_input": S * F // t}


@pytest.mark.parametrize("lesson", ("tp_mlp", "sp_mlp"))
@pytest.mark.parametrize("t", WORLDS)
def test_each_ranks_saved_activations_are_the_blocks_terms(finished, lesson, t):
    run = finished[(lesson, t)]
    assert run["status"] == "done", run["error"]
    assert all(c["passed"] for c in run["checks"])
    sp = lesson == "sp_mlp"
    block, paper = block_elements(t, sp), paper_elements(t, sp)
    for rank in range(t):
        got = {m["name"]: m for m in run["metrics"] if m["rank"] == rank}
        for term in TERMS:
            m = got[f"saved_{term}_bytes"]
            assert m["value"] == m["expected"] == 4 * block[term], (rank, term, m)
            assert m.get("paper") == (4 * paper[term] if term in paper else None), (rank, term, m)
            assert m["unit"] == "bytes" and f"s={S}, b=1, h={H}, f={F}, t={t}" in m["formula"]
        total = got["saved_activation_bytes"]
        assert total["value"] == total["expected"] == 4 * sum(block.values())
        assert total["paper"] == 4 * sum(paper.values())


def test_sequence_parallelism_cuts_layernorm_t_fold_but_this_w1_keeps_the_whole_input(finished):
    for t in (2, 4):
        tp = {m["name"]: m for m in finished[("tp_mlp", t)]["metrics"] if m["rank"] == 0}
        sp = {m["name"]: m for m in finished[("sp_mlp", t)]["metrics"] if m["rank"] == 0}
        assert sp["saved_ln_input_bytes"]["value"] * t == tp["saved_ln_input_bytes"]["value"]
        assert sp["saved_w1_input_bytes"]["value"] == tp["saved_w1_input_bytes"]["value"] == 4 * S * H
        assert sp["saved_w1_input_bytes"]["paper"] * t == sp["saved_w1_input_bytes"]["value"]
        assert "all-gathers again in backward" in sp["saved_w1_input_bytes"]["formula"]
        assert sp["saved_activation_bytes"]["value"] < tp["saved_activation_bytes"]["value"]
