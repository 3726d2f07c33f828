"""DistributedDataParallel training of a small transformer language model on CPU (gloo),
one process per rank, rendezvous from torch.distributed's environment (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT; xdc sets them). Data: byte-level text of the licenses every
Debian system ships. Each step reports to XDC_EVENTS: "step" (with the loss), "compute"
(forward and backward up to the moment DDP's gradient bucket is ready, and the optimizer
step after the all-reduce) and "allreduce" (each bucket's all-reduce, with its bytes, timed
by a communication hook that does what DDP does without one), so xdc can predict the step
from its parts."""
import argparse
import glob
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xdc_events import emit  # noqa: E402


class TinyLM(nn.Module):
    def __init__(self, vocab=256, dim=64, heads=4, layers=2, seq=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, x):
        h = self.embed(x) + self.pos[: x.shape[1]]
        return self.head(self.body(h, mask=self.mask[: x.shape[1], : x.shape[1]]))


def corpus():
    data = b""
    for f in sorted(glob.glob("/usr/share/common-licenses/*")):
        if os.path.isfile(f):
            with open(f, "rb") as fh:
                data += fh.read()
    return torch.tensor(list(data), dtype=torch.long)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--fail-rank", type=int, default=-1, help="this rank exits 3 at step 2")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    # ~135 K parameters: one gradient bucket (DDP's first bucket holds up to 1 MiB), so
    # the step is compute, one all-reduce, the optimizer. No buffer broadcast per forward.
    model = DDP(TinyLM(seq=args.seq), broadcast_buffers=False)  # the mask is a constant
    clock = {}

    # Each gradient bucket's all-reduce, timed: its start ends the step's compute. It is
    # what DDP does without a hook (gloo's all-reduce of the bucket, then the mean); the
    # hook only adds the events.
    def timed_allreduce(state, bucket):
        clock["ready"] = time.time()
        t = bucket.buffer()
        clock["bucket"] = t  # held until the end (see the teardown below)
        emit(rank, "allreduce", "begin")
        dist.all_reduce(t)
        t /= world
        emit(rank, "allreduce", "end", bytes=t.numel() * t.element_size())
        fut = torch.futures.Future()
        fut.set_result(t)
        return fut

    model.register_comm_hook(None, timed_allreduce)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    data = corpus()
    gen = torch.Generator().manual_seed(1000 + rank)  # each rank its own batches
    for step in range(args.steps):
        if step == 2 and rank == args.fail_rank:
            print(f"rank {rank}: failing on purpose at step {step}", file=sys.stderr)
            sys.exit(3)
        idx = torch.randint(0, len(data) - args.seq - 1, (args.batch,), generator=gen)
        x = torch.stack([data[i : i + args.seq] for i in idx])
        y = torch.stack([data[i + 1 : i + args.seq + 1] for i in idx])
        emit(rank, "step", "begin", step=step)
        emit(rank, "compute", "begin", step=step)
        clock.clear()
        logits = model(x)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 256), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()  # returns once every bucket's all-reduce is done
        # Forward and backward end when the last bucket's gradients were ready.
        emit(rank, "compute", "end", t=clock.get("ready"), step=step)
        emit(rank, "compute", "begin", step=step)
        opt.step()
        emit(rank, "compute", "end", step=step)
        emit(rank, "step", "end", step=step, loss=loss.item())
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    # Teardown. gloo's worker thread drops a finished all-reduce's tensors on its own; if it
    # drops the last reference to the hook's bucket, freeing its Python object needs the
    # GIL, which the main thread holds while DDP's reducer is freed and joins that thread:
    # a deadlock (PyTorch 1.13, about one exit in 15 here). So Python keeps the last bucket
    # until the threads are idle (a barrier after the last all-reduce) and frees it itself.
    dist.barrier()
    del model
    dist.destroy_process_group()
    clock.clear()


if __name__ == "__main__":
    main()
