#!/usr/bin/env bash
# The first-run grid of issue 26 (prints figures; nothing fails): `apsearch
# run --model M --cluster D:N` with no other flag for Llama-3.1-8B / 70B /
# 405B, Qwen2.5-72B, Mixtral-8x7B, Qwen3-30B-A3B and DeepSeek-V3 on 8, 16,
# 64, 256, 1,024, 4,096 and 16,384 H100 (hosts of 8), B200 (hosts of 8) and
# GB200 (NVL72 compute trays of 4) GPUs: 147 runs, each timed (wall, CPU =
# user + sys of the process and its --jobs workers), rank 1's layout, step
# time, MFU, peak memory against the limit, and the flags of an expert's
# reading (scripts/firstrun-grid.lua says what each flag checks).
#   bench/firstrun-grid.sh [--csv OUT.csv] [--launch 1] [--models ...] ...
#
# 2026-12-04, 2-core AMD EPYC VM shared with other builds (load 1.3-2.5),
# default --jobs (2 workers), before = main at 2bb6c7d, after = branch
# h-first (d99fab3 fill_last over 32 chunks, 12f5bbb MoE micro-batch 4 / 8):
#
#                        before              after
#   runs with rank 1     126 of 147          126 of 147
#   no feasible (nofit)  21                  21: every one a cluster whose
#                                            memory cannot hold the model
#                                            states and activations (70B /
#                                            72B on 8-16 H100, 405B on
#                                            8-64 H100 and 8-16 B200 / GB200,
#                                            Mixtral on 8 H100, DeepSeek-V3
#                                            on 8-64 of each); each says
#                                            where it fits (fit_probe)
#   CPU s                median 0.16, p90 0.28, max 0.35
#                                            median 0.15, p90 0.44, max 0.85
#                                            (DeepSeek-V3: its space 2x with
#                                            micro-batch 4 and 8; the most,
#                                            0.85, a no-fit run that also
#                                            probes doubled clusters)
#   wall s               median 0.11, max 0.30   median 0.12, max 0.83
#   candidates           1,680-17,184        1,680-34,368
#   errors               0                   0
#   global batch         the header's recipe tokens-per-GPU rule in every run
#   TP within NVLink, EP dividing the experts and the stage's ranks: every run
#   Megatron-LM launch file (--launch 1) = the estimate's layout: 126 of 126
#     (devices, tp / pp / vpp / cp / ep / etp, micro / global batch, seq,
#     SP, FSDP / distributed optimizer, recompute, layers of every rank)
#   peak above 90 % of device memory ('!'): 41 -> 45 rank-1s
#   MFU outside dense 25-60 % / MoE 8-50 %: 6, all at 16,384 GPUs where
#     the batch cap (16M dense, 15,360 -> 8,192 MoE sequences) leaves
#     under one sequence a GPU (the run's header says so)
#
# MFU % of rank 1 after (bf16, of the dense peak; "-": no feasible strategy):
#   model          GPUs       8     16     64    256   1024   4096  16384   CPU s (max of the row, before -> after)
#   llama-3.1-8b   H100    50.6   52.3   51.5   51.5   51.5   47.5   25.1   0.16 -> 0.15
#   llama-3.1-8b   B200    42.2   42.0   40.9   40.9   40.8   33.9   16.0   0.15 -> 0.16
#   llama-3.1-8b   GB200   41.9   41.9   41.3   41.3   41.2   36.8   23.0   0.14 -> 0.15
#   llama-3.1-70b  H100       -      -   47.2   47.0   47.1   47.0   34.3   0.17 -> 0.17
#   llama-3.1-70b  B200    36.0   44.8   43.5   43.3   43.2   37.1   23.4   0.18 -> 0.18
#   llama-3.1-70b  GB200   36.8   44.8   45.1   45.2   45.4   44.3   38.1   0.16 -> 0.13
#   llama-3.1-405b H100       -      -      -   47.9   49.1   47.5   41.8   0.23 -> 0.20
#   llama-3.1-405b B200       -      -   42.6   48.1   48.0   44.5   34.6   0.23 -> 0.19
#   llama-3.1-405b GB200      -      -   44.2   48.3   48.3   47.0   43.8   0.18 -> 0.22
#   qwen2.5-72b    H100       -      -   47.0   46.8   46.8   46.6   34.2   0.17 -> 0.16
#   qwen2.5-72b    B200    35.0   44.8   43.6   43.4   43.4   37.1   23.3   0.17 -> 0.15
#   qwen2.5-72b    GB200   35.7   45.0   45.3   45.1   45.3   44.5   38.3   0.19 -> 0.15
#   mixtral-8x7b   H100       -   38.2   40.8   40.4   40.2   35.5   25.7   0.22 -> 0.29
#   mixtral-8x7b   B200    37.7   39.3   36.6   36.0   36.1   28.4   17.5   0.20 -> 0.26
#   mixtral-8x7b   GB200   38.2   38.9   38.8   38.8   38.8   37.0   24.9   0.24 -> 0.26
#   qwen3-30b-a3b  H100    16.6   21.4   21.9   23.0   23.0   20.0    9.3   0.25 -> 0.34
#   qwen3-30b-a3b  B200    19.8   20.9   19.8   19.7   19.7   12.7    4.4   0.28 -> 0.37
#   qwen3-30b-a3b  GB200   19.4   20.3   20.2   20.1   20.0   17.0    5.8   0.30 -> 0.32
#   deepseek-v3    H100       -      -      -   20.4   22.0   19.2   13.9   0.35 -> 0.85
#   deepseek-v3    B200       -      -      -   21.4   21.0   17.3   10.1   0.32 -> 0.78
#   deepseek-v3    GB200      -      -      -   24.2   24.1   22.1   17.2   0.30 -> 0.56
#
# Rank 1s that changed (before -> after): Qwen3-30B-A3B on B200 / GB200 now
# runs Megatron-Bridge's recipe layout (TP 1, PP 1, EP 8, MBS 4), 4-16 %
# faster than the best of micro-batch 1-2; DeepSeek-V3 takes PP 16 x VPP 2
# or PP 8 x VPP 4 with NVIDIA's Et|(tt|)*30L, 1-13 % faster (H100 1,024:
# TP 2 PP 16 40.12 s -> TP 1 PP 16 VPP 2 37.59 s); Mixtral on 1,024 B200
# EP 1 PP 4 -> EP 8 MBS 4 (0.5 %).  Every other rank 1 is unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
exec lua5.4 scripts/firstrun-grid.lua "$@"
