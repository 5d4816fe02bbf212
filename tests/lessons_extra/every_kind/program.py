import torch

from workers import comm


def run(lab, p):
    x = torch.arange(4.0) + 4 * lab.rank
    comm.all_reduce(x, label="sum over the ranks")
    if p.makes == "collectives":
        comm.all_gather(x, label="everyone's sums")
        return
    lab.show("x", x)
    peer = 1 - lab.rank
    for mb in range(2):                                        # stage 0 sends each microbatch to stage 1
        with lab.compute("F", stage=lab.rank, microbatch=mb):
            y = x * (mb + 1)
        if lab.rank == 0:
            comm.isend(y, dst=peer, label=f"microbatch {mb} to stage 1").wait()
        else:
            comm.recv(torch.empty_like(y), src=peer, label=f"microbatch {mb} from stage 0")
    lab.show("y", y)
    if lab.rank == 0:
        lab.metric("first_sum", float(x[0]), "", formula="x₀ of rank 0 + x₀ of rank 1 = 0 + 4", expected=4.0)
