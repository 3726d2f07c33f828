#!/usr/bin/env python3
"""PyTorch reference for xdc-bench-model and xdc-bench-gpu: the same mini Llama (fused qkv,
interleaved RoPE, causal attention, SwiGLU, RMSNorm, untied head), the same training step
(forward, backward, global-norm clipping, AdamW), fp32, written as plain eager PyTorch.
Prints one JSON line.

    bench_torch.py --threads N [--seconds S]            CPU training speed (xdc-bench-model)
    bench_torch.py --device cuda [MODEL] [--seconds S]  GPU training speed (xdc-bench-gpu)
    bench_torch.py --device cuda --check DIR            autograd loss and gradients from the
        weights, tokens and targets `xdc-bench-gpu check --dump DIR` wrote, compared with the
        CUDA stage's gradients there: per tensor max|g_torch - g_xdc| / max|g_torch|
    bench_torch.py --device cuda --gemm-peak            fp32 GEMM peak (8192^3, no TF32)
MODEL: --dim --layers --heads --ffn --seq --vocab --batch (default: the "small" preset on
the CPU; bench_gpu.sh passes the "medium" one). TF32 stays off (PyTorch's default for
matmul), as in the CUDA stage's cuBLAS calls.
Run it with OMP_WAIT_POLICY=PASSIVE for 2 threads (its OpenMP and intra-op pools otherwise
spin against each other on a 2-core machine).
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB, DIM, LAYERS, HEADS, FFN, SEQ, BATCH = 256, 256, 4, 4, 688, 128, 8
EPS, THETA = 1e-5, 10000.0


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=EPS):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(seq, hd, theta=THETA):
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


def make_model(device):
    model = Llama().to(device)
    return model


def check(args, device):
    """Loss and gradients of the weights xdc-bench-gpu dumped, against its CUDA stage's."""
    import numpy as np
    d = args.check
    meta = json.load(open(os.path.join(d, "meta.json")))
    params = np.fromfile(os.path.join(d, "params.f32"), dtype=np.float32)
    grads = np.fromfile(os.path.join(d, "grads.f32"), dtype=np.float32)
    tok = torch.from_numpy(np.fromfile(os.path.join(d, "tokens.i32"), dtype=np.int32).astype(np.int64))
    tgt = torch.from_numpy(np.fromfile(os.path.join(d, "targets.i32"), dtype=np.int32).astype(np.int64))
    model = make_model(device)
    named = {}
    for i, blk in enumerate(model.blocks):
        named.update({f"layers.{i}.attn_norm": blk.attn_norm.weight, f"layers.{i}.wqkv": blk.wqkv.weight,
                      f"layers.{i}.wo": blk.wo.weight, f"layers.{i}.mlp_norm": blk.mlp_norm.weight,
                      f"layers.{i}.w13": blk.w13.weight, f"layers.{i}.w2": blk.w2.weight})
    named.update({"embedding": model.emb.weight, "final_norm": model.norm.weight, "lm_head": model.head.weight})
    with torch.no_grad():
        for t in meta["tensors"]:
            w = named[t["name"]]
            assert w.numel() == t["size"], (t["name"], w.shape, t["size"])
            w.copy_(torch.from_numpy(params[t["offset"]:t["offset"] + t["size"]]).view_as(w))
    loss = model(tok.view(BATCH, SEQ).to(device), tgt.view(BATCH, SEQ).to(device))
    loss.backward()
    worst, worst_name = 0.0, ""
    for t in meta["tensors"]:
        g = named[t["name"]].grad.detach().double().cpu().flatten()
        ours = torch.from_numpy(grads[t["offset"]:t["offset"] + t["size"]]).double()
        scale = g.abs().max().item()
        rel = (g - ours).abs().max().item() / scale if scale > 0 else 0.0
        if rel >= worst:
            worst, worst_name = rel, t["name"]
    return {"mode": "check", "loss_torch": loss.item(), "loss_xdc": meta["loss"],
            "loss_rel_err": abs(loss.item() - meta["loss"]) / abs(loss.item()),
            "grad_max_rel_err": worst, "grad_worst_tensor": worst_name}


def gemm_peak(device):
    n = 8192
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    best = 0.0
    for _ in range(10):
        t0 = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        best = max(best, 2 * n ** 3 / (time.perf_counter() - t0))
    return {"mode": "gemm_peak", "n": n, "dtype": "float32", "tf32": False,
            "gemm_peak_tflops": best / 1e12}


def main():
    global VOCAB, DIM, LAYERS, HEADS, FFN, SEQ, BATCH
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--check", metavar="DIR")
    ap.add_argument("--gemm-peak", action="store_true")
    for k in ("vocab", "dim", "layers", "heads", "ffn", "seq", "batch"):
        ap.add_argument("--" + k, type=int)
    args = ap.parse_args()
    if args.check:
        meta = json.load(open(os.path.join(args.check, "meta.json")))
        for k, v in meta["config"].items():
            if getattr(args, k, None) is None and k in ("vocab", "dim", "layers", "heads", "ffn", "seq", "batch"):
                setattr(args, k, v)
        if meta["config"]["kv_heads"] != meta["config"]["heads"]:
            raise SystemExit("bench_torch.py: the reference model has no grouped-query attention")
    VOCAB = args.vocab or VOCAB
    DIM, LAYERS, HEADS = args.dim or DIM, args.layers or LAYERS, args.heads or HEADS
    FFN, SEQ, BATCH = args.ffn or FFN, args.seq or SEQ, args.batch or BATCH
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
        torch.set_num_interop_threads(1)
    elif not torch.cuda.is_available():
        print("bench_torch.py: no CUDA device for PyTorch", flush=True)
        raise SystemExit(77)
    if args.gemm_peak:
        print(json.dumps(gemm_peak(device)))
        return
    torch.manual_seed(1)
    if args.check:
        print(json.dumps(check(args, device)))
        return
    model = make_model(device)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8, foreach=True)
    gen = torch.Generator().manual_seed(1)

    def step():
        data = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=gen).to(device)
        loss = model(data[:, :-1], data[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()  # as xdc's step: the loss comes back to the host

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
    out = {"threads": args.threads, "tokens_per_s": round(max(best, mean), 1),
           "mean_tokens_per_s": round(mean, 1),
           "tokens_per_cpu_s": round(tokens / cpu, 1), "torch": torch.__version__}
    if device.type == "cuda":
        out = {"device": torch.cuda.get_device_name(device), "tokens_per_s": round(max(best, mean), 1),
               "mean_tokens_per_s": round(mean, 1), "torch": torch.__version__,
               "peak_memory_bytes": torch.cuda.max_memory_allocated(device)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
