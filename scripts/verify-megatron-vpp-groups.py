#!/usr/bin/env python3
"""apsearch's interleaved 1F1B with microbatch_group_size against Megatron-LM's
own code.

Megatron-LM (a bare git mirror, default /work/.mirror/NVIDIA+Megatron-LM/repo,
commit d98e8a64) is read, not installed: from megatron/core/pipeline_parallel/
schedules.py the script takes, by their source (ast), the two pure functions
get_pp_rank_microbatches (warm-up count, l.929-986) and get_schedule_table
(l.989-1016), and the two checks of forward_backward_pipelining_with_
interleaving on the group size (l.1160-1180: the `if` statements that raise
and the assignment of final_microbatch_group_size), and runs them without torch
(parallel_state is not reached: a stub p2p_communicator gives the pipeline
size and rank).  A rank's op order is the loop structure of forward_backward_
pipelining_with_interleaving: warm-up forwards k < warm-up (l.1573), then per
k < remaining the forward of virtual micro-batch k + warm-up and the backward
of k (l.1733-1749, forward first: forward_backward_helper_wrapper,
l.1511-1532), then the backwards k in [remaining, total) (l.1971); a forward
runs (microbatch_id_table[k], model_chunk_id_table[k]), a backward chunk
v - 1 - model_chunk_id_table[k] (get_model_chunk_id, l.1244-1249) on its
oldest forward not yet run backward (input_tensors[chunk].pop(0), l.1432).

apsearch's side, through the product: per (p, v, m, G) `apsearch estimate`
of a Megatron strategy with microbatch_group_size G (a 142-layer toy model,
so every p x v splits (142 + 2) layers evenly; global batch m, one data-
parallel rank) -- refused (VPP_INVALID) or its Chrome trace (--trace), each
rank's forwards and backwards in time order; and aps_schedule_warmup of
libapsearch.so (ctypes) for the warm-up counts.

Grid: p in 2..4, v in 2..4, m in p..3p+2, G in p..m.  Prints the number of
combinations where apsearch and Megatron agree on (1) accepting or refusing,
(2) every rank's warm-up count, (3) every rank's op order (accepted ones);
exit 1 on any difference.  Python 3 standard library only.  Usage:
  scripts/verify-megatron-vpp-groups.py [--mirror DIR] [--commit SHA] [--build DIR]
"""
import argparse
import ast
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import types
import typing

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
MIRROR = "/work/.mirror/NVIDIA+Megatron-LM/repo"
COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
SCHEDULES = "megatron/core/pipeline_parallel/schedules.py"
# the toy model: (L + 2) divisible by every p x v of the grid (lcm 144)
TOY = {"model.num_layers": 142, "model.hidden_size": 512, "model.ffn_hidden_size": 1024,
       "model.num_attention_heads": 8, "model.num_query_groups": 8, "model.vocab_size": 32000}
POLICY = """return {
  model = "llama-3.1-8b",
  cluster = { device = "h100-sxm-80gb", nodes = 1, devices_per_node = 8 },
  training = { global_batch_size = 8, seq_length = 1024, precision = "bf16",
    optimizer = "adamw", framework = "megatron" },
}
"""


def megatron_source(mirror, commit):
    return subprocess.run(["git", "--git-dir", mirror, "show", f"{commit}:{SCHEDULES}"],
                          capture_output=True, text=True, check=True).stdout


def function_node(tree, name):
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def load_megatron(src):
    """Megatron's two functions and its group-size checks, as callables."""
    tree = ast.parse(src)
    ns = {"Optional": typing.Optional, "P2PCommunicator": object, "parallel_state": None}
    for name in ("get_pp_rank_microbatches", "get_schedule_table"):
        exec(compile(ast.Module([function_node(tree, name)], []), SCHEDULES, "exec"), ns)
    body = function_node(tree, "forward_backward_pipelining_with_interleaving").body
    checks = [s for s in body if
              (isinstance(s, ast.If) and any(isinstance(x, ast.Raise) for x in s.body)
               and "microbatch_group_size" in ast.unparse(s.test) + ast.unparse(s.body))
              or (isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "final_microbatch_group_size")]
    assert len(checks) == 3, [ast.unparse(c)[:60] for c in checks]
    code = compile(ast.Module(checks, []), SCHEDULES, "exec")

    def accepts(p, m, G):
        env = {"config": types.SimpleNamespace(microbatch_group_size_per_vp_stage=G),
               "num_microbatches": m, "pipeline_parallel_size": p}
        try:
            exec(code, env)
        except (ValueError, RuntimeError):
            return False
        return True
    return ns["get_pp_rank_microbatches"], ns["get_schedule_table"], accepts


def stub_comm(p, rank, v):
    group = types.SimpleNamespace(size=lambda: p, rank=lambda: rank)
    return types.SimpleNamespace(pp_group=group, virtual_pipeline_model_parallel_size=v)


def megatron_order(ranks_mb, table, p, v, m, G, rank):
    """Rank `rank`'s ops, ('F' | 'B', micro-batch, chunk), and its warm-up."""
    total, _, warm, remaining = ranks_mb(m, v, G, p2p_communicator=stub_comm(p, rank, v))
    mb_tab, chunk_tab = zip(*table)
    queued = [[] for _ in range(v)]  # input_tensors per chunk (FIFO)
    ops = []

    def fwd(k):
        queued[chunk_tab[k]].append(mb_tab[k])
        ops.append(("F", mb_tab[k], chunk_tab[k]))

    def bwd(k):
        c = v - 1 - chunk_tab[k % total]
        ops.append(("B", queued[c].pop(0), c))
    for k in range(warm):
        fwd(k)
    for k in range(remaining):
        fwd(k + warm)
        bwd(k)
    for k in range(remaining, total):
        bwd(k)
    return ops, warm


def apsearch_run(binary, policy, p, v, m, G, trace):
    cmd = [binary, "estimate", policy, "--quiet", "--trace", trace,
           "--set", f"training.global_batch_size={m}"]
    for k, x in TOY.items():
        cmd += ["--set", f"{k}={x}"]
    cmd += ["--strategy", f"pp_degree={p},vpp_degree={v},dp_degree=1,micro_batch_size=1,"
            f"microbatch_group_size={G},allow_idle_devices=true"]
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    if "feasible  yes" not in out:
        return None, out
    with open(trace) as fh:
        events = json.load(fh)["traceEvents"]
    ranks = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("forward", "backward"):
            a = e["args"]
            op = ("F" if e["cat"] == "forward" else "B", a["micro_batch"] - 1, a["chunk"] - 1)
            ranks.setdefault(e["pid"] - 1, []).append((e["ts"], op))
    return [[op for _, op in sorted(ranks.get(i, []), key=lambda x: x[0])] for i in range(p)], out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror", default=MIRROR)
    ap.add_argument("--commit", default=COMMIT)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    opts = ap.parse_args()
    ranks_mb, schedule_table, accepts = load_megatron(megatron_source(opts.mirror, opts.commit))
    lib = ctypes.CDLL(os.path.join(opts.build, "libapsearch.so"))
    lib.aps_schedule_warmup.restype = ctypes.c_int64
    lib.aps_schedule_warmup.argtypes = [ctypes.c_int64] * 5
    binary = os.path.join(opts.build, "apsearch")
    n = same_accept = same_warm = same_order = accepted = 0
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        policy, trace = os.path.join(tmp, "policy.lua"), os.path.join(tmp, "trace.json")
        with open(policy, "w") as fh:
            fh.write(POLICY)
        for p in range(2, 5):
            for v in range(2, 5):
                for m in range(p, 3 * p + 3):
                    for G in range(p, m + 1):
                        n += 1
                        ok = accepts(p, m, G)
                        orders, out = apsearch_run(binary, policy, p, v, m, G, trace)
                        if (orders is not None) == ok:
                            same_accept += 1
                        else:
                            bad.append(f"p={p} v={v} m={m} G={G}: Megatron {'runs' if ok else 'raises'}, "
                                       f"apsearch: {out.strip().splitlines()[-1] if out.strip() else '?'}")
                        table = schedule_table(m, v, G)
                        mine = [megatron_order(ranks_mb, table, p, v, m, G, i) for i in range(p)]
                        warm = [lib.aps_schedule_warmup(p, v, m, G, i) for i in range(p)]
                        if warm == [w for _, w in mine]:
                            same_warm += 1
                        else:
                            bad.append(f"p={p} v={v} m={m} G={G}: warm-up {warm} vs Megatron "
                                       f"{[w for _, w in mine]}")
                        if ok and orders is not None:
                            accepted += 1
                            if orders == [o for o, _ in mine]:
                                same_order += 1
                            else:
                                bad.append(f"p={p} v={v} m={m} G={G}: rank orders differ")
    print(f"{n} (p, v, m, G) combinations: accept/refuse agree {same_accept}/{n}; warm-up counts "
          f"agree {same_warm}/{n}; rank orders agree {same_order}/{accepted} accepted by both")
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
