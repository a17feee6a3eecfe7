#!/usr/bin/env python3
"""Megatron-LM's own FLOPs count of a recipe, and the tokens/s a TFLOP/s is.

Megatron-LM logs "throughput per GPU (TFLOP/s/GPU)" as
num_floating_point_operations(args, batch_size) / step time / GPUs
(megatron/training/training.py).  This script runs that function itself,
taken from training.py of a Megatron-LM git directory at a commit (default
NVIDIA/Megatron-LM d48bd6be, the dev branch the examples/moe_recipes tables
were measured on), on the ARGS of recipe YAMLs read from the same commit,
and prints per recipe the FLOPs per sample and per token and, given the
README's TFLOP/s, the tokens/s per GPU:

    tokens/s/GPU = TFLOP/s/GPU * 1e12 / (FLOPs per sample / seq_length)

Usage:
  scripts/megatron-flops.py [--git-dir DIR] [--commit REV] RECIPE[=TFLOPS] ...
  e.g. scripts/megatron-flops.py \
    examples/moe_recipes/qwen3_30b/h100/bf16_32GPU_TP1PP1EP8.yaml=234.1

Needs python3 and PyYAML, not torch: only the two FLOPs functions are
executed (extracted with ast), the hybrid-model and linear-attention tests
they call are stubbed as false (the recipes are plain GPT models).
"""
import argparse
import ast
import subprocess
import sys
from types import SimpleNamespace

import yaml

DEFAULT_GIT_DIR = "/work/.mirror/NVIDIA+Megatron-LM/repo"
DEFAULT_COMMIT = "d48bd6be0a85cc0d6d3cc71e8750cf357cc6bdb1"
FUNCTIONS = ("_dsv4_hybrid_self_attention_flops", "num_floating_point_operations")

# Megatron pads the tokenizer's vocabulary to a multiple of
# make_vocab_size_divisible_by x TP (arguments.py _vocab_size_with_padding);
# the recipes choose the multiple (1187, 3232) so the padded size is the HF
# config's vocab_size of the model: Qwen3 151936, DeepSeek-V3/V4 129280.
PADDED_VOCAB = {"Qwen/Qwen3-30B-A3B": 151936, "Qwen/Qwen3-235B-A22B": 151936}
DEEPSEEK_PADDED_VOCAB = 129280

# arguments.py defaults at d48bd6be for the arguments the function reads
# that a recipe may leave out
DEFAULTS = dict(
    group_query_attention=False, num_query_groups=1, num_experts=None, moe_layer_freq=1,
    mtp_num_layers=None, moe_ffn_hidden_size=None, moe_latent_size=None,
    moe_shared_expert_intermediate_size=None, multi_latent_attention=False, q_lora_rank=None,
    kv_lora_rank=32, qk_head_dim=128, qk_pos_emb_head_dim=64, v_head_dim=128,
    experimental_attention_variant=None, attention_output_gate=False, swiglu=False,
    kv_channels=None, moe_router_topk=2,
)


def fail(msg):
    """Bad input: one line naming it, exit 2."""
    print(f"megatron-flops.py: {msg}", file=sys.stderr)
    sys.exit(2)


def git_show(git_dir, commit, path):
    r = subprocess.run(["git", "--git-dir", git_dir, "show", f"{commit}:{path}"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["git show failed"])[-1]
        fail(f"{git_dir} {commit[:8]}:{path}: {why}")
    return r.stdout


def flops_function(git_dir, commit):
    """num_floating_point_operations from training.py at the commit."""
    tree = ast.parse(git_show(git_dir, commit, "megatron/training/training.py"))
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in FUNCTIONS]
    assert len(body) == len(FUNCTIONS), "training.py: FLOPs functions not found"
    env = {"is_hybrid_model": lambda args: False, "is_linear_attention_variant": lambda v: False}
    exec(compile(ast.Module(body=body, type_ignores=[]), "training.py", "exec"), env)
    return env["num_floating_point_operations"]


def recipe_args(text):
    """The recipe's ARGS as Megatron's parsed args (the fields the function reads)."""
    a = dict(DEFAULTS)
    a.update(yaml.safe_load(text)["ARGS"])
    for key in ("moe_layer_freq", "csa_compress_ratios"):
        # arguments.py moe_freq_type / the list arguments: a "([0]*3+[1]*58)" pattern
        if isinstance(a.get(key), str):
            a[key] = list(eval(a[key], {"__builtins__": {}}))
    if a["kv_channels"] is None:
        a["kv_channels"] = a["hidden_size"] // a["num_attention_heads"]
    if a.get("ffn_hidden_size") is None:
        # not given by the DeepSeek-V4 recipes (arguments.py derives one from
        # hidden); every layer there is MoE, so the dense width multiplies no
        # layer and any value gives the same count
        a["ffn_hidden_size"] = 4 * a["hidden_size"]
    a["padded_vocab_size"] = PADDED_VOCAB.get(a["tokenizer_model"], DEEPSEEK_PADDED_VOCAB)
    return SimpleNamespace(**a)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--git-dir", default=DEFAULT_GIT_DIR)
    p.add_argument("--commit", default=DEFAULT_COMMIT)
    p.add_argument("recipes", nargs="+", help="RECIPE.yaml[=TFLOP/s per GPU]")
    opt = p.parse_args()
    flops = flops_function(opt.git_dir, opt.commit)
    print("recipe\tflops_per_sample\tflops_per_token\ttflops_per_gpu\ttokens_per_s_per_gpu")
    for spec in opt.recipes:
        path, _, tf = spec.partition("=")
        try:
            if tf and not float(tf) > 0:
                raise ValueError
        except ValueError:
            fail(f"{spec}: TFLOP/s {tf!r} is not a positive number")
        args = recipe_args(git_show(opt.git_dir, opt.commit, path))
        per_sample = flops(args, 1)
        per_token = per_sample / args.seq_length
        tps = f"{float(tf) * 1e12 / per_token:.1f}" if tf else ""
        print(f"{path}\t{per_sample:.6e}\t{per_token:.6e}\t{tf}\t{tps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
