from pydantic import Field, ValidationInfo, field_validator

from workers.lessons import Lesson
from workers.lessons.params import LessonParams, SEED_MAX, rule, world_size


class TpAttentionParams(LessonParams):
    heads: int = Field(8, ge=1, le=64, description="query heads (split across the ranks)")
    kv_heads: int = Field(2, ge=1, le=64, description="key/value heads (GQA when fewer than heads)")
    head_dim: int = Field(4, ge=1, le=64, description="width of each head")
    seq_len: int = Field(8, ge=1, le=128, description="tokens")
    seed: int = Field(0, ge=0, le=SEED_MAX)

    @field_validator("heads")
    @classmethod
    def _heads_split(cls, value: int, info: ValidationInfo) -> int:
        t = world_size(info)
        if value % t:
            raise rule("tp_attention.heads_split", "heads={value} must be divisible by the tensor-parallel degree t={t}: "
                       "each rank takes heads/t whole heads", value=value, t=t)
        return value

    @field_validator("kv_heads")
    @classmethod
    def _kv_heads_fit(cls, value: int, info: ValidationInfo) -> int:
        t, heads = world_size(info), info.data.get("heads", value)
        if heads % value:
            raise rule("tp_attention.kv_heads_divide_heads", "kv_heads={value} must divide heads={heads}: "
                       "each KV head serves heads/kv_heads queries", value=value, heads=heads)
        if value >= t and value % t:
            raise rule("tp_attention.kv_heads_split", "kv_heads={value} must be divisible by t={t} to split them "
                       "across the ranks", value=value, t=t)
        if value < t and t % value:
            raise rule("tp_attention.kv_heads_replicate", "with fewer KV heads than ranks each KV head is replicated on "
                       "t/kv_heads ranks: kv_heads={value} must divide t={t}", value=value, t=t)
        return value


LESSON = Lesson(
    id="tp_attention",
    title="Tensor-parallel attention and GQA",
    summary="Attention split by heads: Q, K, V by output, the output projection by input, one all-reduce; "
            "with fewer KV heads than ranks, each KV head (and its cache) replicated on t/n_kv ranks.",
    params=TpAttentionParams,
    world_sizes=tuple(range(1, 9)),
    sources=("program.py", "../tp_mlp/program.py"),
)
