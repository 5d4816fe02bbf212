"""What each collective must produce, computed plainly from every rank's input — no
torch.distributed — and where each output element comes from (its origin ranks).

Inputs are lists of numbers; `inputs[r]` is rank r's tensor before the call.
"""


def chunk(values, index, parts):
    size = len(values) // parts
    return values[index * size:(index + 1) * size]


def combine(columns, reduce_op):
    """Element-wise reduction of equally long lists."""
    if reduce_op == "max":
        return [max(col) for col in zip(*columns)]
    total = [sum(col) for col in zip(*columns)]
    return [v / len(columns) for v in total] if reduce_op == "avg" else total


def result(op, rank, inputs, root=0, reduce_op="sum"):
    """Rank `rank`'s tensor after `op`."""
    world = len(inputs)
    mine = inputs[rank]
    if op == "broadcast":
        return inputs[root]
    if op == "reduce":
        return combine(inputs, reduce_op) if rank == root else mine
    if op == "all_reduce":
        return combine(inputs, reduce_op)
    if op == "all_gather":
        return [v for r in range(world) for v in inputs[r]]
    if op == "reduce_scatter":
        return combine([chunk(inputs[r], rank, world) for r in range(world)], "sum")
    if op == "all_to_all":
        return [v for r in range(world) for v in chunk(inputs[r], rank, world)]
    if op == "scatter":
        return chunk(inputs[root], rank, world)
    if op == "gather":
        return [v for r in range(world) for v in inputs[r]] if rank == root else mine
    if op == "send_recv":
        return inputs[rank - 1] if rank % 2 == 1 else mine   # odd ranks receive from their left neighbour
    if op == "barrier":
        return mine
    raise ValueError(op)


def receives(op, rank, world, root=0):
    """Whether rank `rank` holds a result after `op`: not a non-root of reduce or gather (only the root
    receives), not a rank of send_recv that only sends (or sits out), not anyone after a barrier."""
    if op in ("reduce", "gather"):
        return rank == root
    if op == "send_recv":
        return rank % 2 == 1
    return op != "barrier"


def origin(op, rank, world, size, root=0):
    """For each element of rank `rank`'s output, the ranks whose inputs it came from."""
    everyone = list(range(world))
    if op in ("all_reduce", "reduce_scatter") or (op == "reduce" and rank == root):
        return [everyone] * len(result(op, rank, [[0] * size] * world))
    if op in ("broadcast", "scatter"):
        return [[root]] * len(result(op, rank, [[0] * size] * world, root))
    if op in ("all_gather", "all_to_all") or (op == "gather" and rank == root):
        per_rank = size if op != "all_to_all" else size // world
        return [[r] for r in range(world) for _ in range(per_rank)]
    if op == "send_recv" and rank % 2 == 1:
        return [[rank - 1]] * size
    return [[rank]] * size
