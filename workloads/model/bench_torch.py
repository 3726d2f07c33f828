#!/usr/bin/env python3
"""PyTorch reference for xdc-bench-model: the same mini Llama (fused qkv, interleaved RoPE,
causal attention, SwiGLU, RMSNorm, untied head), the same training step (forward, backward,
global-norm clipping, AdamW), fp32 on CPU. Prints one JSON line: {"threads", "tokens_per_s"}.

    bench_torch.py --threads N [--seconds S]
Run it with OMP_WAIT_POLICY=PASSIVE for 2 threads (its OpenMP and intra-op pools otherwise
spin against each other on a 2-core machine).
"""
import argparse
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, LAYERS, HEADS, FFN, SEQ, BATCH = 256, 256, 4, 4, 688, 128, 8


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq, hd, theta=10000.0):
    freq = theta ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = torch.arange(seq, dtype=torch.float64)[:, None] * freq[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def rope(x, cos, sin):  # x (B, H, T, hd), interleaved pairs
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.hd = DIM // HEADS
        self.attn_norm = RMSNorm(DIM)
        self.wqkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.mlp_norm = RMSNorm(DIM)
        self.w13 = nn.Linear(DIM, 2 * FFN, bias=False)
        self.w2 = nn.Linear(FFN, DIM, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, C = x.shape
        q, k, v = self.wqkv(self.attn_norm(x)).view(B, T, 3, HEADS, self.hd).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hd))
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.wo(y)
        a, b = self.w13(self.mlp_norm(x)).chunk(2, dim=-1)
        return x + self.w2(F.silu(a) * b)


class Llama(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB, bias=False)
        cos, sin = rope_tables(SEQ, DIM // HEADS)
        self.register_buffer("cos", cos)
        self.register_buffer("sin", sin)
        self.register_buffer("mask", torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), 1))

    def forward(self, idx, targets):
        x = self.emb(idx)
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin, self.mask)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(1)
    model = Llama()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8, foreach=True)
    gen = torch.Generator().manual_seed(1)

    def step():
        data = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=gen)
        loss = model(data[:, :-1], data[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(3):
        step()
    # Windows of >= 1 s; the best window is the figure least disturbed by other processes
    # (as timeit takes the minimum), exactly as xdc-bench-model measures its side.
    steps, t0, c0 = 0, time.perf_counter(), time.process_time()
    best, w0, wsteps = 0.0, t0, 0
    while steps < 5 or time.perf_counter() - t0 < args.seconds:
        step()
        steps += 1
        wsteps += 1
        now = time.perf_counter()
        if wsteps >= 2 and now - w0 >= 1.0:
            best = max(best, wsteps * BATCH * SEQ / (now - w0))
            w0, wsteps = now, 0
    tokens = steps * BATCH * SEQ
    mean = tokens / (time.perf_counter() - t0)
    cpu = time.process_time() - c0
    print(json.dumps({"threads": args.threads, "tokens_per_s": round(max(best, mean), 1),
                      "mean_tokens_per_s": round(mean, 1),
                      "tokens_per_cpu_s": round(tokens / cpu, 1), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
