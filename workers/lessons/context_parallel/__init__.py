from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, rule, world_size


class ContextParallelParams(LessonParams):
    method: Literal["ring", "ulysses"] = Field(
        "ring", description="ring attention (K/V blocks passed around the ring) or Ulysses (all-to-all to head shards)")
    seq_len: int = Field(16, ge=1, le=512, description="S, tokens in the whole sequence (split across the ranks)")
    heads: int = Field(4, ge=1, le=64, description="attention heads (Ulysses splits them across the ranks)")
    head_dim: int = Field(4, ge=1, le=64, description="d, the width of each head")
    causal: bool = Field(True, description="causal attention: a token sees only the tokens before it")
    load_balance: bool = Field(True, description="ring, causal: the zig-zag split, so every rank has as much work")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="seed for the inputs")
    mistake: Literal["none", "average_blocks"] = Field(
        "none", description="reproduce a classic bug: merge the ring's blocks by averaging, not by their softmax mass")

    @field_validator("seq_len")
    @classmethod
    def _sequence_splits(cls, value: int, info: ValidationInfo) -> int:
        p = world_size(info)
        if value % (2 * p):
            raise rule("context_parallel.seq_len_splits", "seq_len={value} must be divisible by 2 × ranks = {chunks}: "
                       "each rank holds S/p tokens, and the zig-zag split cuts the sequence into 2p chunks",
                       value=value, chunks=2 * p)
        return value

    @field_validator("heads")
    @classmethod
    def _heads_split(cls, value: int, info: ValidationInfo) -> int:
        p = world_size(info)
        if info.data.get("method") == "ulysses" and value % p:
            raise rule("context_parallel.heads_split", "Ulysses gives each rank heads/p whole heads: heads={value} "
                       "must be divisible by {ranks}", value=value, ranks=p)
        return value

    @field_validator("mistake")
    @classmethod
    def _mistake_of_the_ring(cls, value: str, info: ValidationInfo) -> str:
        if value == "average_blocks" and info.data.get("method") != "ring":
            raise rule("context_parallel.average_blocks_needs_ring", "average_blocks is a ring-attention bug "
                       "(merging the K/V blocks' results): choose method=ring")
        return value


LESSON = Lesson(
    id="context_parallel",
    title="Context parallelism: ring attention and Ulysses",
    summary="Attention over a sequence split across ranks, two ways: K/V blocks passed around a ring with an "
            "online-softmax merge (and the zig-zag split that balances causal work), or all-to-alls from "
            "sequence shards to head shards and back — output and gradients checked against one process.",
    params=ContextParallelParams,
    world_sizes=tuple(range(1, 9)),
)
