import torch
import torch.distributed as dist


def dispatch(tokens, experts, group):
    """Sort the tokens by expert, tell every rank how many it gets, send them with uneven splits."""
    world = dist.get_world_size(group)
    order = torch.argsort(experts, stable=True)
    ...


def combine(expert_out, state, group):
    """The same all-to-all backwards, then each token back to its position."""
    ...
