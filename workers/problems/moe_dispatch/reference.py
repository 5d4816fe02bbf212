import torch
import torch.distributed as dist


def dispatch(tokens, experts, group):
    """Sort the tokens by expert, tell every rank how many it gets, send them with uneven splits."""
    world = dist.get_world_size(group)
    order = torch.argsort(experts, stable=True)
    send = torch.bincount(experts, minlength=world)
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    received = tokens.new_empty(int(recv.sum()), tokens.shape[1])
    dist.all_to_all_single(received, tokens[order], recv.tolist(), send.tolist(), group=group)
    return received, (order, send.tolist(), recv.tolist())


def combine(expert_out, state, group):
    """The same all-to-all backwards, then each token back to its position."""
    order, send, recv = state
    back = expert_out.new_empty(sum(send), expert_out.shape[1])
    dist.all_to_all_single(back, expert_out.contiguous(), send, recv, group=group)
    out = torch.empty_like(back)
    out[order] = back
    return out
