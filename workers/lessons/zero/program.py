"""ZeRO (Rajbhandari et al., 2020): data parallelism without every rank keeping every byte.

Each parameter is cut into N pieces; rank r owns piece r of every parameter, and Adam's state for it.
    stage 1  optimizer state sharded   after backward: reduce-scatter the gradients (each rank gets the
                                       average of its piece), Adam on the piece, all-gather the pieces
    stage 2  + gradients sharded       each gradient is reduce-scattered as soon as it is ready, and the
                                       full gradient freed
    stage 3  + parameters sharded      a layer's weights are all-gathered just before its forward and
                                       again before its backward, and freed right after

Memory per rank (Ψ parameters; P, G, K bytes per element of parameters, gradients, optimizer state —
here float32 with Adam: P = G = 4, K = 8; in the paper's mixed precision 2, 2, 12):
    stage 1: PΨ + GΨ + KΨ/N      stage 2: PΨ + (G + K)Ψ/N      stage 3: (P + G + K)Ψ/N
Communication per step: 2Ψ elements for stages 1 and 2 (reduce-scatter + all-gather), 3Ψ for stage 3.

Checked against one process with Adam on the whole batch: each rank's gradient pieces of the first
step (Adam divides by the gradient's own size, so parameters alone would not see a gradient summed
instead of averaged), and the parameters after the last step.
"""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from workers import comm

LR = 0.01


class Traffic:
    """Elements this rank's collectives moved, counted as nccl-tests does (the full size)."""
    elements = 0


def piece_size(numel, world):
    return -(-numel // world)                                          # ceil: the last piece is padded


def gather(piece, shape, label):
    """All-gather every rank's piece of a parameter and rebuild the whole tensor."""
    full = comm.all_gather(piece, label=label)                         # [N·k], the last piece padded
    Traffic.elements += full.numel()
    return full[: torch.Size(shape).numel()].view(shape)


def scatter_mean(full, world, label):
    """Reduce-scatter a whole gradient: this rank keeps the average of its piece."""
    k = piece_size(full.numel(), world)
    padded = F.pad(full.flatten(), (0, k * world - full.numel()))
    Traffic.elements += padded.numel()
    return comm.reduce_scatter(padded, label=label) / world


def my_piece(tensor, rank, world):
    k = piece_size(tensor.numel(), world)
    return F.pad(tensor.detach().flatten(), (0, k * world - tensor.numel()))[rank * k:(rank + 1) * k].clone()


class ZeroThreeLinearTanh(torch.autograd.Function):
    """Stage 3: a layer whose weights exist whole only while it computes."""

    @staticmethod
    def forward(ctx, x, w_piece, b_piece, w_shape, b_shape, world):
        w = gather(w_piece, w_shape, "stage 3 forward: gather the layer's weights")
        b = gather(b_piece, b_shape, "stage 3 forward: gather the layer's bias")
        ctx.save_for_backward(x, w_piece, b_piece)                     # pieces only: w and b are freed
        ctx.shapes, ctx.world = (w_shape, b_shape), world
        return torch.tanh(F.linear(x, w, b))

    @staticmethod
    def backward(ctx, grad_y):
        x, w_piece, b_piece = ctx.saved_tensors
        (w_shape, b_shape), world = ctx.shapes, ctx.world
        w = gather(w_piece, w_shape, "stage 3 backward: gather the layer's weights again").requires_grad_()
        b = gather(b_piece, b_shape, "stage 3 backward: gather the layer's bias again").requires_grad_()
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            y = torch.tanh(F.linear(x, w, b))
            grad_x, grad_w, grad_b = torch.autograd.grad(y, (x, w, b), grad_y)
        return (grad_x, scatter_mean(grad_w, world, "stage 3: reduce-scatter the weight gradient"),
                scatter_mean(grad_b, world, "stage 3: reduce-scatter the bias gradient"), None, None, None)


def make_model(p):
    torch.manual_seed(p.seed)
    return nn.Sequential(*[nn.Sequential(nn.Linear(p.hidden, p.hidden), nn.Tanh()) for _ in range(p.layers)])


def train_stage_1_or_2(lab, p, model, x, y, world):
    params = list(model.parameters())
    pieces = [my_piece(param, lab.rank, world).requires_grad_() for param in params]
    optimizer = torch.optim.Adam(pieces, lr=LR)                        # Adam's state: for my pieces only
    first_grads = []
    if p.stage == 2:                                                   # reduce-scatter each gradient when ready
        for param, piece in zip(params, pieces):
            def ready(param, piece=piece):
                piece.grad = scatter_mean(param.grad, world, "stage 2: reduce-scatter a gradient as it is ready")
                param.grad = None                                      # the whole gradient is freed at once
            param.register_post_accumulate_grad_hook(ready)
    for step in range(p.steps):
        with lab.compute(f"forward + backward {step}"):
            F.mse_loss(model(x), y).backward()
        if p.stage == 1:
            for param, piece in zip(params, pieces):
                piece.grad = scatter_mean(param.grad, world, "stage 1: reduce-scatter the gradient")
        first_grads = first_grads or [piece.grad.clone() for piece in pieces]
        with lab.compute(f"Adam on my pieces {step}"):
            optimizer.step()
        with torch.no_grad():
            for param, piece in zip(params, pieces):                   # everyone needs the whole update
                param.copy_(gather(piece.detach(), param.shape, "all-gather the updated pieces"))
                if p.stage == 1:
                    param.grad.zero_()                                 # stage 1 keeps the whole gradient
    return params, pieces, optimizer, first_grads


def train_stage_3(lab, p, model, x, y, world):
    shapes = [(layer[0].weight.shape, layer[0].bias.shape) for layer in model]
    pieces = [my_piece(t, lab.rank, world).requires_grad_() for layer in model
              for t in (layer[0].weight, layer[0].bias)]               # the whole weights are dropped
    optimizer = torch.optim.Adam(pieces, lr=LR)
    first_grads = []
    for step in range(p.steps):
        with lab.compute(f"forward + backward {step}"):
            h = x
            for i, (w_shape, b_shape) in enumerate(shapes):
                h = ZeroThreeLinearTanh.apply(h, pieces[2 * i], pieces[2 * i + 1], w_shape, b_shape, world)
            F.mse_loss(h, y).backward()
        first_grads = first_grads or [piece.grad.clone() for piece in pieces]
        with lab.compute(f"Adam on my pieces {step}"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=False)                     # the gradient pieces stay allocated
    with lab.untraced():                                               # only for the check, not ZeRO's traffic:
        shapes = [shape for pair in shapes for shape in pair]          # rebuild the whole parameters
        params = [comm.all_gather(piece.detach())[:shape.numel()].view(shape) for piece, shape in zip(pieces, shapes)]
    return params, pieces, optimizer, first_grads


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


def run(lab, p):
    world, rank = lab.world_size, lab.rank
    model = make_model(p).to(lab.device)
    reference = copy.deepcopy(model)
    torch.manual_seed(p.seed + 1)
    x = torch.randn(world * p.batch_per_rank, p.hidden).to(lab.device)
    y = torch.randn(world * p.batch_per_rank, p.hidden).to(lab.device)
    mine = slice(rank * p.batch_per_rank, (rank + 1) * p.batch_per_rank)
    psi = sum(param.numel() for param in model.parameters())           # Ψ

    train = train_stage_3 if p.stage == 3 else train_stage_1_or_2
    params, pieces, optimizer, first_grads = train(lab, p, model, x[mine], y[mine], world)

    held_params = pieces if p.stage == 3 else list(model.parameters())
    held_grads = [piece.grad for piece in pieces] if p.stage >= 2 else [param.grad for param in model.parameters()]
    state = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t) and t.dim() > 0]
    P, G, K = 4, 4, 8                                                  # float32 parameters and gradients; Adam's two moments
    formulas = {1: (P * psi, G * psi, K * psi / world), 2: (P * psi, G * psi / world, K * psi / world),
                3: (P * psi / world, G * psi / world, K * psi / world)}[p.stage]
    for name, measured, formula in zip(("parameters", "gradients", "optimizer state"),
                                       (nbytes(held_params), nbytes(held_grads), nbytes(state)), formulas):
        lab.metric(f"memory_{name.replace(' ', '_')}", measured, "bytes", expected=formula, psi=psi,
                   formula={"parameters": "PΨ" if p.stage < 3 else "PΨ/N",
                            "gradients": "GΨ" if p.stage < 2 else "GΨ/N",
                            "optimizer state": "KΨ/N"}[name] + f"  (Ψ={psi}, N={world}, P=G=4, K=8)")
    lab.metric("comm_elements_per_step", Traffic.elements / p.steps, "elements", psi=psi,
               expected=(2 if p.stage < 3 else 3) * psi, formula="2Ψ (stages 1, 2); 3Ψ (stage 3)")

    ref_optimizer = torch.optim.Adam(reference.parameters(), lr=LR)
    for step in range(p.steps):                                        # one process, the whole batch
        F.mse_loss(reference(x), y).backward()
        if step == 0:
            for i, (piece, ref) in enumerate(zip(first_grads, reference.parameters())):
                lab.check(f"gradient {i} piece, step 1", piece, my_piece(ref.grad, rank, world),
                          "my piece of the averaged gradient against the same piece of one process's gradient")
        ref_optimizer.step()
        ref_optimizer.zero_grad()
    for i, (param, ref) in enumerate(zip(params, reference.parameters())):
        lab.check(f"parameter {i} after {p.steps} steps", param, ref,
                  "the parameters (gathered from every rank's pieces) against one process with Adam on the whole batch")
