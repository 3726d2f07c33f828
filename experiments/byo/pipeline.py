"""A hand-written two-stage pipeline in PyTorch: rank 0 holds the first half of a small
MLP, rank 1 the second; each step sends MICROBATCHES activations forward with isend/irecv
(GPipe order: all forwards, then all backwards) and the gradients back, then both stages
step their optimizers. Reports "step" (loss on rank 1), "compute" and "send" spans to
XDC_EVENTS (docs/workload.md)."""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xdc_events import emit, span  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dim", type=int, default=256)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    assert dist.get_world_size() == 2, "two stages, two ranks"
    torch.manual_seed(rank)
    d = args.dim
    stage = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())
    if rank == 1:
        stage.append(nn.Linear(d, 1))
    opt = torch.optim.Adam(stage.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(7)
    target_w = torch.randn(d, 1, generator=gen) / d**0.5
    for step in range(args.steps):
        emit(rank, "step", "begin", step=step)
        xs = [torch.randn(args.batch, d, generator=gen) for _ in range(args.microbatches)]
        opt.zero_grad()
        outs, ins, losses = [], [], []
        for m, x in enumerate(xs):  # forwards
            if rank == 0:
                with span(rank, "compute", step=step, mb=m):
                    h = stage(x)
                outs.append(h)
                with span(rank, "send", step=step, mb=m, bytes=h.numel() * 4):
                    dist.isend(h.detach(), 1).wait()
            else:
                h = torch.empty(args.batch, d)
                dist.irecv(h, 0).wait()
                h.requires_grad_()
                ins.append(h)
                with span(rank, "compute", step=step, mb=m):
                    y = torch.tanh(x @ target_w)
                    losses.append(nn.functional.mse_loss(stage(h), y))
        for m in range(args.microbatches):  # backwards
            if rank == 1:
                with span(rank, "compute", step=step, mb=m):
                    (losses[m] / args.microbatches).backward()
                with span(rank, "send", step=step, mb=m, bytes=ins[m].grad.numel() * 4):
                    dist.isend(ins[m].grad, 0).wait()
            else:
                g = torch.empty_like(outs[m])
                dist.irecv(g, 1).wait()
                with span(rank, "compute", step=step, mb=m):
                    outs[m].backward(g)
        opt.step()
        loss = sum(x.item() for x in losses) / args.microbatches if rank == 1 else None
        if loss is not None:
            emit(rank, "step", "end", step=step, loss=loss)
            print(f"step {step} loss {loss:.4f}", flush=True)
        else:
            emit(rank, "step", "end", step=step)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
