#!/usr/bin/env python3
"""bench/pytorch_gpt.py — the same GPT-2 training step as bench/bench_nn.c in eager PyTorch, for a
like-for-like comparison: pre-LayerNorm blocks, causal attention scaled by 1/sqrt(hs), gelu tanh,
tied LM head, mean cross-entropy, AdamW (decay on 2-D weights), no dropout, random tokens, B=8
T=256, 2 threads. Prints one JSON line per preset with the keys bench_nn prints plus "impl":"pytorch".
--precision bf16 runs the forward under torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's
mixed precision: bf16 matmuls on oneDNN, fp32 master weights and optimizer), the counterpart of
bench_nn's bf16 step.

Run it with OPENBLAS_CORETYPE=SkylakeX (bench/run.sh does) so PyTorch's OpenBLAS is at its best.
    python3 bench/pytorch_gpt.py [--steps N] [--warmup N] [--threads N] [--peak GFLOPS] [--preset tiny|small|gpt2-124m|all]
                           [--precision fp32|bf16]
"""
import argparse
import json
import math
import os
import resource
import statistics
import time

import torch
import torch.nn.functional as F

PRESETS = {
    "tiny": dict(V=256, maxT=256, L=4, H=4, C=256),
    "small": dict(V=256, maxT=256, L=6, H=8, C=512),
    "gpt2-124m": dict(V=256, maxT=1024, L=12, H=12, C=768),
}


class GPT(torch.nn.Module):
    def __init__(self, V, maxT, L, H, C):
        super().__init__()
        self.L, self.H, self.C = L, H, C
        self.wte = torch.nn.Embedding(V, C)
        self.wpe = torch.nn.Embedding(maxT, C)
        self.blocks = torch.nn.ModuleList()
        for _ in range(L):
            b = torch.nn.Module()
            b.ln1 = torch.nn.LayerNorm(C, eps=1e-5)
            b.attn = torch.nn.Linear(C, 3 * C)
            b.proj = torch.nn.Linear(C, C)
            b.ln2 = torch.nn.LayerNorm(C, eps=1e-5)
            b.fc = torch.nn.Linear(C, 4 * C)
            b.fcproj = torch.nn.Linear(4 * C, C)
            self.blocks.append(b)
        self.lnf = torch.nn.LayerNorm(C, eps=1e-5)
        for n, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if n.endswith("proj.weight") else 0.02
                torch.nn.init.normal_(p, 0.0, std)
            elif n.endswith("bias"):
                torch.nn.init.zeros_(p)
        self.register_buffer("mask", torch.tril(torch.ones(maxT, maxT, dtype=torch.bool)))

    def forward(self, idx, targets):
        B, T = idx.shape
        C, H = self.C, self.H
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            h = b.ln1(x)
            q, k, v = b.attn(h).split(C, dim=2)
            q = q.view(B, T, H, C // H).transpose(1, 2)
            k = k.view(B, T, H, C // H).transpose(1, 2)
            v = v.view(B, T, H, C // H).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
            att = att.masked_fill(~self.mask[:T, :T], float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + b.proj(y)
            x = x + b.fcproj(F.gelu(b.fc(b.ln2(x)), approximate="tanh"))
        logits = self.lnf(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def flops_per_token(V, maxT, L, H, C, T):
    n = L * (12 * C * C + 13 * C) + V * C + 2 * C  # N without wpe
    return 6 * n + 12 * L * T * C


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peak", type=float, default=0.0, help="fp32 peak GFLOP/s measured by bench_nn")
    ap.add_argument("--preset", default="all", choices=["tiny", "small", "gpt2-124m", "all"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    B, T = 8, 256
    for name, cfg in PRESETS.items():
        if a.preset not in ("all", name):
            continue
        model = GPT(**cfg)
        decay = [p for p in model.parameters() if p.dim() == 2]
        nodecay = [p for p in model.parameters() if p.dim() != 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                 {"params": nodecay, "weight_decay": 0.0}],
                                lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
        times, cpu, loss = [], [], 0.0
        for s in range(a.warmup + a.steps):
            x = torch.randint(0, cfg["V"], (B, T))
            y = torch.randint(0, cfg["V"], (B, T))
            t0, c0 = time.perf_counter(), time.process_time()
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
                l = model(x, y)
            l.backward()
            opt.step()
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            loss = l.item()
            if s >= a.warmup:
                times.append(dt)
                cpu.append(dc)
        med = statistics.median(times)
        tps = B * T / med
        fpt = flops_per_token(**cfg, T=T)
        gf = fpt * tps / 1e9
        print(json.dumps({
            "bench": "train_step", "impl": "pytorch", "preset": name, "precision": a.precision, "B": B, "T": T,
            "threads": torch.get_num_threads(), "steps": a.steps, "tokens_per_s": round(tps, 1),
            "tokens_per_s_min": round(B * T / max(times), 1), "tokens_per_s_max": round(B * T / min(times), 1),
            "step_s": round(med, 4), "gflops": round(gf, 1), "flops_formula": "6N+12LTC",
            "flops_per_token": fpt, "peak_gflops": a.peak, "mfu": round(gf / a.peak, 3) if a.peak > 0 else None,
            "cpu_s_per_step": round(statistics.median(cpu), 4),
            "tokens_per_cpu_s": round(B * T / statistics.median(cpu), 1),
            "loss": round(loss, 4),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "blas": "PyTorch %s, %d threads, OPENBLAS_CORETYPE=%s" % (
                torch.__version__, torch.get_num_threads(), os.environ.get("OPENBLAS_CORETYPE", "unset")),
        }), flush=True)


if __name__ == "__main__":
    main()
