"""Wrong solutions for the judge's tests, each the problem's reference with one classic mistake
(or, for two, a file of its own in this folder)."""

from __future__ import annotations

from pathlib import Path

from workers.problems import PROBLEMS

HERE = Path(__file__).resolve().parent

# name → (problem, [(text in the reference, what the mistake puts there), …])
MISTAKES = {
    "fg_operators/no_backward_allreduce": ("fg_operators", [
        ("        grad = grad.clone()\n        dist.all_reduce(grad, group=ctx.group)\n", "")]),
    "fg_operators/swapped": ("fg_operators", [
        ("class CopyToTensorParallel", "class SWAP"),
        ("class ReduceFromTensorParallel", "class CopyToTensorParallel"),
        ("class SWAP", "class ReduceFromTensorParallel")]),
    "sp_mlp_block/backward_not_summed": ("sp_mlp_block", [
        ("        return _reduce_scatter(grad, ctx.group), None",
         "        rows = grad.shape[0] // dist.get_world_size(ctx.group)\n"
         "        return grad[dist.get_rank() * rows:(dist.get_rank() + 1) * rows], None   # forgets to sum")]),
    "sp_mlp_block/all_reduce_then_slice": ("sp_mlp_block", [
        ("        ctx.group = group\n        return _reduce_scatter(x, group)",
         "        ctx.group = group\n        x = x.clone()\n"
         "        dist.all_reduce(x, group=group)                   # right numbers, twice the traffic\n"
         "        rows = x.shape[0] // dist.get_world_size(group)\n"
         "        return x[dist.get_rank() * rows:(dist.get_rank() + 1) * rows]")]),
    "pp_1f1b_loop/warmup_too_long": ("pp_1f1b_loop", [
        ("    warmup = min(p - stage - 1, m)", "    warmup = min(p - stage, m)                  # one forward too many")]),
    "ring_allreduce/chunk_index": ("ring_allreduce", [
        ("        chunks[(rank - step - 1) % world] += incoming",
         "        chunks[(rank - step) % world] += incoming        # adds into the wrong chunk")]),
    "fsdp_wrapper/all_reduce_then_slice": ("fsdp_wrapper", [
        ("    shard = torch.empty(full_grad.numel() // world, dtype=full_grad.dtype)\n"
         "    dist.reduce_scatter_single(shard, full_grad.contiguous(), group=group)\n",
         "    total = full_grad.clone()\n"
         "    dist.all_reduce(total, group=group)                 # right numbers, twice the bytes\n"
         "    shard = total.chunk(world)[dist.get_rank(group)]\n")]),
    "moe_dispatch/combine_in_sorted_order": ("moe_dispatch", [
        ("    out = torch.empty_like(back)\n    out[order] = back\n", "    out = back                                          # forgets to undo the sort\n")]),
    "moe_dispatch/even_splits": ("moe_dispatch", [
        ("    dist.all_to_all_single(received, tokens[order], recv.tolist(), send.tolist(), group=group)",
         "    received = tokens.new_empty(tokens.shape)                # as if every expert got T / world\n"
         "    dist.all_to_all_single(received, tokens[order], group=group)")]),
    "ring_attention/average_blocks": ("ring_attention", [
        ("            out, lse = merge(out, lse, *block_attention(q, kv[0], kv[1], positions(rank), positions(owner)))",
         "            out_b, lse_b = block_attention(q, kv[0], kv[1], positions(rank), positions(owner))\n"
         "            out, lse = (out * step + out_b) / (step + 1), torch.logaddexp(lse, lse_b)   # ignores each block's mass")]),
    "fsdp_wrapper/no_mean": ("fsdp_wrapper", [("    return shard / world", "    return shard")]),
}
FILES = {"pp_1f1b_loop/gpipe_order": "wrong_gpipe_order.py", "ring_allreduce/uses_all_reduce": "wrong_uses_all_reduce.py",
         "ring_attention/all_gather_kv": "wrong_ring_attention_all_gather.py"}


def wrong_solution(name: str) -> str:
    """The code of one wrong solution, e.g. "ring_allreduce/chunk_index"."""
    if name in FILES:
        return (HERE / FILES[name]).read_text()
    problem, edits = MISTAKES[name]
    code = (PROBLEMS[problem].dir / "reference.py").read_text()
    for old, new in edits:
        assert old in code, f"{name}: the reference no longer contains {old!r}"
        code = code.replace(old, new)
    return code
