#!/usr/bin/env python3
"""Held-out validation rows from Megatron-LM's own functional tests.

Reads a bare git mirror of NVIDIA/Megatron-LM (default: the commit
d98e8a64ddf34856e74b24714e3bedb2f5a39553) and writes
tests/fixtures/heldout/megatron_lm_functional.csv in the validation schema of
docs/accuracy.md ("The cases file"): one row per (gpt / moe / mixtral test
case, machine) with a golden_values_dev_dgx_{h100,gb200,a100}.json whose
arguments the schema can state.  Every case left out is printed with its
reason (stderr), as is every row the script drops.

Measured values (CI's TensorBoard scalars, written by the last rank only:
megatron/training/global_vars.py:241 `args.rank == (args.world_size - 1)`):
  measured_step_time_s = median of `iteration-time` over the iterations
    after the first 3 (warm-up, compilation, first allocations);
  measured_mem_gib = max over the iterations of `mem-max-allocated-bytes`
    / 2^30 (torch.cuda.memory_stats()["allocated_bytes.all.peak"],
    training.py:3444-3446), measured_mem_kind allocated -- only where
    --pipeline-model-parallel-size is 1: with a pipeline the last rank is
    the last stage, not necessarily the rank apsearch's mem_allocated (the
    largest rank's) describes, and `apsearch validate` cannot compare a
    chosen stage.

The GPU count of a case is its CI recipe's (tests/test_utils/recipes/
{h100,gb200}/*.yaml: nodes x gpus of the recipe that names the case).

Python 3 standard library only.  Usage:
  scripts/megatron-functional-cases.py [--mirror DIR] [--commit SHA] [--out CSV]
"""
import argparse
import csv
import json
import math
import os
import re
import statistics
import subprocess
import sys

MIRROR = "/work/.mirror/NVIDIA+Megatron-LM/repo"
COMMIT = "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
CASES = "tests/functional_tests/test_cases"
FAMILIES = ("gpt", "moe", "mixtral")
MACHINES = {  # golden file machine -> (apsearch device preset, GPUs per node, recipe directory)
    "h100": ("h100-sxm-80gb", 8, "h100"),
    "gb200": ("gb200", 4, "gb200"),
    "a100": ("a100-sxm4-80gb", 8, "h100"),  # the h100 recipes carry the dgx_a100 platform
}
WARMUP = 3  # iterations left out of the step-time median

HEADER = (
    "case_id,source,reliability,model,num_layers,hidden_size,ffn_hidden_size,num_attention_heads,"
    "num_query_groups,vocab_size,seq_length,mlp,norm,position_embedding,tie_word_embeddings,flash_attention,"
    "device,num_devices,devices_per_node,framework,precision,dp_degree,fsdp_degree,zero_stage,tp_degree,"
    "sequence_parallel,pp_degree,vpp_degree,cp_degree,micro_batch_size,global_batch_size,layer_recompute,"
    "flops_convention,measured_step_time_s,measured_mem_gib,measured_mem_kind,nvlink_domain_size,"
    "pipeline_layout,cp_comm_type,fp8_param_gather,recompute_num_layers,recompute_method,recompute_modules,"
    "tp_comm_overlap,cuda_graphs,cuda_graph_scope,overlap_grad_reduce,microbatch_group_size,software,"
    "num_experts,experts_per_token,"
    "moe_ffn_hidden_size,shared_expert_ffn_hidden_size,num_dense_layers,dense_ffn_hidden_size,moe_layer_freq,"
    "ep_degree,etp_degree,moe_token_dispatcher,moe_capacity_factor,moe_flex_dispatcher_backend,"
    "moe_router_fusion,overlap_moe_expert_parallel_comm,attention,q_lora_rank,kv_lora_rank,qk_nope_head_dim,"
    "qk_rope_head_dim,v_head_dim,mtp_layers,head_dim,qk_norm,linear_bias,dropout,max_position_embeddings,"
    "notes"
).split(",")

# Tokenizers whose vocabulary the YAML does not state (Megatron pads it, the
# CSV holds it unpadded; apsearch pads by 128 x TP as Megatron's default)
TOKENIZER_VOCAB = {
    "GPT2BPETokenizer": 50257,  # gpt2 vocab.json
    "TikTokenizer": 131072,  # DEFAULT_TIKTOKEN_MAX_VOCAB (tiktoken_tokenizer.py:24)
    "GPTSentencePieceTokenizer": 256000,  # nemotron_2_256k.model
    "Llama2Tokenizer": 32000,
}

# Arguments with no column that change memory or time: the case is skipped.
UNSUPPORTED = {
    "--use-megatron-fsdp": "Megatron-FSDP with optim_grads_params sharding and fp32 main params/grads dtypes "
                           "(--megatron-fsdp-*-dtype) has no columns",
    "--optimizer": None,  # checked below: muon
    "--fine-grained-activation-offloading": "fine-grained activation offloading of named modules has no column",
    "--offload-modules": "module offloading has no column",
    "--hierarchical-context-parallel-sizes": "hierarchical a2a+p2p context parallelism has no cp_comm_type value",
    "--cp-comm-type": None,  # checked below
    "--num-distributed-optimizer-instances": None,  # checked below (> 1)
    "--first-last-layers-bf16": "fp8 with the first/last layers in bf16 has no column",
    "--softmax-type": "learnable-softmax (attention sinks) has no column",
    "--window-size": "sliding-window attention has no column",
    "--squared-relu": "squared-ReLU MLP is not an mlp value (gelu | swiglu)",
    "--quick-geglu": "quick-GeGLU MLP is not an mlp value",
    "--export-kd-teacher-load": "knowledge distillation runs a teacher model too",
    "--perform-rl-step": "RL (GRPO) step: inference and training in one iteration",
    "--step-batch-size-schedule": "batch-size ramp: the global batch changes during the run",
    "--delay-wgrad-compute": "delayed weight-gradient compute (EP overlap schedule) has no column",
    "--use-transformer-engine-op-fuser": "TE op fuser (fused grouped MLP) has no column",
}


def git(mirror, *args):
    return subprocess.run(["git", "--git-dir", mirror, *args], capture_output=True, text=True,
                          check=True).stdout


def scalar(text):
    text = re.sub(r"\s+#.*$", "", text).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text


def parse_config(text):
    """The model_config.yaml subset the functional tests use: top-level
    `KEY: value` lines and the MODEL_ARGS / ENV_VARS maps of scalars."""
    top, maps, section = {}, {"MODEL_ARGS": {}, "ENV_VARS": {}}, None
    for line in text.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            m = re.match(r"^([A-Za-z_0-9]+)\s*:\s*(.*)$", line)
            if not m:
                section = None
                continue
            key, rest = m[1], scalar(m[2])
            section = key if key in maps else None
            top[key] = rest
            continue
        if section:
            m = re.match(r"^\s+(\S+?)\s*:\s*(.*)$", line)
            if m:
                maps[section][m[1]] = scalar(m[2])
    return top, maps["MODEL_ARGS"], maps["ENV_VARS"]


def truthy(args, key):
    return args.get(key, "false").lower() == "true"


def recipe_world_sizes(mirror, commit):
    """case name -> {recipe dir: set of world sizes} over every recipe that
    names the case in a test_case list (commented-out entries included: the
    golden values predate the comment)."""
    out = {}
    for path in git(mirror, "ls-tree", "-r", "--name-only", commit, "tests/test_utils/recipes").split():
        parts = path.split("/")
        if len(parts) != 5 or parts[3] not in ("h100", "gb200") or not path.endswith(".yaml"):
            continue
        text = git(mirror, "show", f"{commit}:{path}")
        nodes = re.search(r"^\s+nodes:\s*(\d+)", text, re.M)
        gpus = re.search(r"^\s+gpus:\s*(\d+)", text, re.M)
        model = re.search(r"^\s+model:\s*(\S+)", text, re.M)
        if not (nodes and gpus and model):
            continue
        for m in re.finditer(r"test_case:\s*\[([^\]]*)\]", text):
            for name in m[1].split(","):
                name = name.strip()
                if name:
                    out.setdefault((model[1], name), {}).setdefault(parts[3], {})[path] = int(nodes[1]) * int(gpus[1])
    return out


def expand_layout(text):
    """Megatron's --pipeline-model-parallel-layout (e.g. Et*2|(tt|)*5t|tmL)
    as decoder layers per virtual stage, and the number of MTP layers."""
    s = text.replace(" ", "")
    while True:
        m = re.search(r"\(([^()]*)\)\*(\d+)", s)
        if not m:
            break
        s = s[:m.start()] + m[1] * int(m[2]) + s[m.end():]
    s = re.sub(r"([EtmL])\*(\d+)", lambda m: m[1] * int(m[2]), s)
    stages = s.split("|")
    return [st.count("t") for st in stages], s.count("m")


def moe_layer_freq(text):
    """--moe-layer-freq as (leading dense layers, frequency), or None."""
    text = text.strip()
    if re.fullmatch(r"\d+", text):
        return 0, int(text)
    m = re.fullmatch(r"\(?\[0\]\*(\d+)\+\[1\]\*(\d+)\)?", text)
    if m:
        return int(m[1]), 1
    return None


def step_stats(golden):
    it = golden.get("iteration-time", {}).get("values", {})
    times = [float(v) for k, v in it.items()
             if int(k) > WARMUP and not isinstance(v, str) and math.isfinite(float(v))]
    mem = golden.get("mem-max-allocated-bytes", {}).get("values", {})
    mems = [float(v) for v in mem.values() if not isinstance(v, str) and math.isfinite(float(v))]
    return (statistics.median(times) if times else None, len(times),
            max(mems) / 2 ** 30 if mems else None)


def build_row(fam, case, machine, top, a, env, world, golden_name, short, golden):
    """The CSV row of one case on one machine, or raises ValueError(reason)."""
    notes, prod = [], []
    if machine == "gb200" and case.endswith("_1node"):
        # e.g. gpt3_mcore_te_tp1_pp4_vp1: 0.106 s on 2 x 4 GB200, 1.93 s as
        # _1node on 4 GPUs with the same global batch (2x the work per GPU)
        raise ValueError("GB200 single-node CI run (gb200/*-1node.yaml): iteration time 5-20x its 2-node twin's "
                         "at twice the work per GPU, outside the model (left out)")
    mode = top.get("MODE", "pretraining")
    if mode != "pretraining":
        raise ValueError(f"MODE {mode}: not a training run")
    if any(k.startswith("MODEL_ARGS_") for k in top) or "BASE_MODEL_ARGS" in top:
        raise ValueError("several training phases (MODEL_ARGS_2...)")
    for key, why in UNSUPPORTED.items():
        if key in a and why:
            raise ValueError(f"{key}: {why}")
    if a.get("--optimizer", "adam") != "adam":
        raise ValueError(f"--optimizer {a['--optimizer']}: only Adam's state is modelled")
    if "--cp-comm-type" in a and a["--cp-comm-type"] not in ("p2p", "all_gather", "a2a"):
        raise ValueError(f"--cp-comm-type {a['--cp-comm-type']}: not a cp_comm_type value")
    if int(a.get("--num-distributed-optimizer-instances", "1")) > 1:
        raise ValueError("--num-distributed-optimizer-instances > 1: optimizer sharded within a partial "
                         "data-parallel group, no column")
    if "--cuda-graph-modules" in a and a["--cuda-graph-modules"].strip("[]\"' ") not in ("attn",):
        raise ValueError(f"--cuda-graph-modules {a['--cuda-graph-modules']}: no cuda_graph_scope value "
                         "captures that set")

    L = int(a["--num-layers"])
    h = int(a["--hidden-size"])
    heads = int(a["--num-attention-heads"])
    groups = int(a["--num-query-groups"]) if truthy(a, "--group-query-attention") else heads
    swiglu = truthy(a, "--swiglu")
    if "--ffn-hidden-size" in a:
        ffn = int(a["--ffn-hidden-size"])
    else:  # arguments.py: 4h, or for swiglu int((4h * 2/3) / 64) * 64
        ffn = int((4 * h * 2 / 3) / 64) * 64 if swiglu else 4 * h
    seq = int(a["--seq-length"])
    tp = int(a.get("--tensor-model-parallel-size", "1"))
    pp = int(a.get("--pipeline-model-parallel-size", "1"))
    cp = int(a.get("--context-parallel-size", "1"))
    mbs = int(a["--micro-batch-size"])
    gbs = int(a["--global-batch-size"])
    if world % (tp * pp * cp):
        raise ValueError(f"{world} GPUs do not divide by TP {tp} x PP {pp} x CP {cp}")
    dp = world // (tp * pp * cp)
    if gbs % (mbs * dp):
        raise ValueError(f"global batch {gbs} is not a multiple of micro-batch {mbs} x DP {dp}")

    # vocabulary
    if "--padded-vocab-size" in a:
        vocab = int(a["--padded-vocab-size"])
    elif "--vocab-size" in a:
        vocab = int(a["--vocab-size"])
    else:
        tok = a.get("--tokenizer-type", "GPT2BPETokenizer")
        if tok not in TOKENIZER_VOCAB:
            raise ValueError(f"--tokenizer-type {tok}: vocabulary size not stated")
        vocab = TOKENIZER_VOCAB[tok]
    div = int(a.get("--make-vocab-size-divisible-by", "128"))
    if div != 128:
        padded = -(-vocab // (div * tp)) * (div * tp)
        apsearch = -(-padded // (128 * tp)) * (128 * tp)
        notes.append(f"--make-vocab-size-divisible-by {div}: vocab_size is Megatron's padded {padded} "
                     f"(from {vocab}), which apsearch pads by 128 x TP to {apsearch}")
        vocab = padded

    # position embedding, norm, MLP, attention
    pos = a.get("--position-embedding-type", "rope" if truthy(a, "--use-rotary-position-embeddings")
                else "learned_absolute")
    if pos == "yarn":
        notes.append("YaRN rotary scaling: priced as rope (same cost)")
        pos = "rope"
    if pos not in ("rope", "learned_absolute"):
        raise ValueError(f"--position-embedding-type {pos}: not a position_embedding value")
    position = "rope" if pos == "rope" else "learned"
    norm = {"LayerNorm": "layernorm", "RMSNorm": "rmsnorm"}.get(a.get("--normalization", "LayerNorm"))
    if not norm:
        raise ValueError(f"--normalization {a['--normalization']}: not a norm value")
    impl = a.get("--transformer-impl", "transformer_engine")
    if impl not in ("transformer_engine", "local"):
        raise ValueError(f"--transformer-impl {impl}")
    backend = a.get("--attention-backend", "auto")
    flash = backend not in ("unfused", "local") and impl != "local"
    if backend in ("unfused", "local"):
        notes.append(f"--attention-backend {backend}: flash_attention false")
    if impl == "local":
        notes.append("--transformer-impl local: Megatron's own layers, no TransformerEngine fused kernels "
                     "(no column; flash_attention false)")
    if env.get("NVTE_FUSED_ATTN") == "0" and flash:
        notes.append("NVTE_FUSED_ATTN 0: TE's flash-attn backend, not cuDNN's")
    kv = int(a["--kv-channels"]) if "--kv-channels" in a else None
    mla = truthy(a, "--multi-latent-attention")
    head_dim = kv if (kv and kv * heads != h and not mla) else None
    dropout = not (float(a.get("--hidden-dropout", "0.1")) == 0 and float(a.get("--attention-dropout", "0.1")) == 0)
    if float(a.get("--hidden-dropout", "0.1")) != float(a.get("--attention-dropout", "0.1")):
        notes.append(f"hidden dropout {a.get('--hidden-dropout', '0.1')}, attention dropout "
                     f"{a.get('--attention-dropout', '0.1')}: dropout true")
    if mla and truthy(a, "--qk-layernorm"):
        notes.append("--qk-layernorm with MLA: the norms on the q and kv latents, part of MLA (qk_norm false)")
    if truthy(a, "--apply-layernorm-1p"):
        notes.append("--apply-layernorm-1p (same cost as LayerNorm)")
    if a.get("--rotary-percent", "1.0") not in ("1.0", "1"):
        notes.append(f"--rotary-percent {a['--rotary-percent']}")

    # precision
    if truthy(a, "--fp16"):
        precision = "fp16"
    elif "--fp8-format" in a:
        recipe = a.get("--fp8-recipe", "tensorwise")
        if recipe not in ("tensorwise", "delayed", "blockwise"):
            raise ValueError(f"--fp8-recipe {recipe}: no precision value")
        precision = "fp8"
        notes.append(f"fp8 {a['--fp8-format']} {recipe} (priced as fp8)")
    else:
        precision = "bf16"

    # pipeline split
    vpp, layout, mtp_from_layout = 1, "", 0
    if "--pipeline-model-parallel-layout" in a:
        stages, mtp_from_layout = expand_layout(a["--pipeline-model-parallel-layout"])
        if len(stages) % pp:
            raise ValueError(f"pipeline layout {a['--pipeline-model-parallel-layout']}: {len(stages)} "
                             f"stages over PP {pp}")
        vpp = len(stages) // pp
        if sum(stages) != L:
            raise ValueError(f"pipeline layout holds {sum(stages)} layers, --num-layers {L}")
        layout = ",".join(map(str, stages))
        notes.append(f"--pipeline-model-parallel-layout {a['--pipeline-model-parallel-layout']}")
    elif "--num-layers-per-virtual-pipeline-stage" in a:
        n = int(a["--num-layers-per-virtual-pipeline-stage"])
        vpp = L // (pp * n)
    elif "--num-virtual-stages-per-pipeline-rank" in a:
        vpp = int(a["--num-virtual-stages-per-pipeline-rank"])
    if "--decoder-first-pipeline-num-layers" in a or "--decoder-last-pipeline-num-layers" in a:
        if vpp != 1:
            raise ValueError("uneven first/last stages with virtual stages")
        first = int(a.get("--decoder-first-pipeline-num-layers", "0")) or None
        last = int(a.get("--decoder-last-pipeline-num-layers", "0")) or None
        middle = pp - (first is not None) - (last is not None)
        rest = L - (first or 0) - (last or 0)
        if middle <= 0 or rest % middle:
            raise ValueError("uneven pipeline split does not divide")
        stages = ([first] if first else []) + [rest // middle] * middle + ([last] if last else [])
        layout = ",".join(map(str, stages))
        notes.append(f"uneven pipeline: first {first} / last {last} layers")
    elif truthy(a, "--account-for-embedding-in-pipeline-split") and truthy(a, "--account-for-loss-in-pipeline-split"):
        layout = "account-embedding-loss"
    elif truthy(a, "--account-for-embedding-in-pipeline-split") or truthy(a, "--account-for-loss-in-pipeline-split"):
        raise ValueError("only one of the embedding / loss accounted for in the pipeline split")
    if pp > 1 and not layout and L % (pp * vpp):
        raise ValueError(f"{L} layers over PP {pp} x VPP {vpp} without a layout")

    # recompute
    gran = a.get("--recompute-granularity", "")
    recompute, r_method, r_num, r_modules = "none", "", "", ""
    if gran == "full":
        recompute = "full"
        r_method = a.get("--recompute-method", "")
        r_num = a.get("--recompute-num-layers", "")
    elif gran == "selective":
        recompute = "selective"
        mods = a.get("--recompute-modules", "").strip("[]\"' ")
        r_modules = "/".join(mods.split()) if mods else ""

    # cuda graphs
    graphs, scope = "", ""
    if "--cuda-graph-impl" in a or truthy(a, "--enable-cuda-graph"):
        graphs = "true"
        scope = "attn" if a.get("--cuda-graph-modules", "").strip("[]\"' ") == "attn" else "layer"
        notes.append(f"CUDA graphs ({a.get('--cuda-graph-impl', 'enable-cuda-graph')}, scope {scope})")

    # MoE
    moe = {}
    experts = int(a.get("--num-experts", "0"))
    if experts:
        freq = moe_layer_freq(a.get("--moe-layer-freq", "1"))
        if not freq:
            raise ValueError(f"--moe-layer-freq {a['--moe-layer-freq']}: not leading-dense + every-n")
        dense, every = freq
        dispatcher = a.get("--moe-token-dispatcher-type", "allgather")
        moe = {
            "num_experts": experts,
            "experts_per_token": int(a.get("--moe-router-topk", "2")),
            "moe_ffn_hidden_size": int(a.get("--moe-ffn-hidden-size", ffn)),
            "shared_expert_ffn_hidden_size": a.get("--moe-shared-expert-intermediate-size", ""),
            "num_dense_layers": dense,
            "dense_ffn_hidden_size": ffn if dense else "",
            "moe_layer_freq": every,
            "ep_degree": int(a.get("--expert-model-parallel-size", "1")),
            "etp_degree": int(a.get("--expert-tensor-parallel-size", tp)),
            "moe_token_dispatcher": dispatcher,
            "moe_capacity_factor": a.get("--moe-expert-capacity-factor", ""),
            "moe_flex_dispatcher_backend": a.get("--moe-flex-dispatcher-backend", "deepep")
            if dispatcher == "flex" else "",
            "moe_router_fusion": "true" if truthy(a, "--moe-router-fusion") else "false",
            "overlap_moe_expert_parallel_comm": "true" if truthy(a, "--overlap-moe-expert-parallel-comm")
            else "false",
        }
        if not truthy(a, "--moe-grouped-gemm"):
            notes.append("no --moe-grouped-gemm: experts run as a loop of GEMMs (not modelled)")
        lb = a.get("--moe-router-load-balancing-type", "aux_loss")
        notes.append(f"router {a.get('--moe-router-score-function', 'softmax')}, {lb}, unbalanced routing "
                     "from random init (default load 1.25)")
        if truthy(a, "--moe-permute-fusion"):
            notes.append("--moe-permute-fusion")
        if truthy(a, "--moe-enable-routing-replay"):
            notes.append("--moe-enable-routing-replay (not modelled)")
    elif any(k in a for k in ("--expert-model-parallel-size", "--moe-token-dispatcher-type")) \
            and int(a.get("--expert-model-parallel-size", "1")) > 1:
        raise ValueError("expert parallelism without experts")
    mtp = int(a.get("--mtp-num-layers", "0")) or mtp_from_layout
    att = {}
    if mla:
        att = {"attention": "mla", "q_lora_rank": a.get("--q-lora-rank", ""),
               "kv_lora_rank": a.get("--kv-lora-rank", "512"), "qk_nope_head_dim": a.get("--qk-head-dim", "128"),
               "qk_rope_head_dim": a.get("--qk-pos-emb-head-dim", "64"), "v_head_dim": a.get("--v-head-dim", "128")}
    elif experts:
        att = {"attention": "gqa" if groups < heads else "mha"}

    # what a production run would not do
    if truthy(a, "--deterministic-mode"):
        prod.append("--deterministic-mode")
    if env.get("NCCL_ALGO"):
        prod.append(f"NCCL_ALGO={env['NCCL_ALGO']}")
    if env.get("NVTE_ALLOW_NONDETERMINISTIC_ALGO") == "0":
        prod.append("NVTE_ALLOW_NONDETERMINISTIC_ALGO=0")
    for flag in ("--log-num-zeros-in-grad", "--log-params-norm", "--no-gradient-accumulation-fusion",
                 "--manual-gc", "--calculate-per-token-loss", "--ddp-average-in-collective",
                 "--no-rope-fusion", "--no-bias-gelu-fusion", "--no-masked-softmax-fusion",
                 "--no-persist-layer-norm", "--use-tp-pp-dp-mapping", "--defer-embedding-wgrad-compute",
                 "--overlap-p2p-communication-warmup-flush", "--no-create-attention-mask-in-dataloader",
                 "--cross-entropy-loss-fusion"):
        if truthy(a, flag):
            prod.append(flag + (f" {a['--manual-gc-interval']}" if flag == "--manual-gc"
                                and "--manual-gc-interval" in a else ""))
    if "--check-weight-hash-across-dp-replicas-interval" in a:
        prod.append(f"--check-weight-hash-across-dp-replicas-interval {a['--check-weight-hash-across-dp-replicas-interval']}")
    if a.get("--empty-unused-memory-level", "0") != "0":
        prod.append(f"--empty-unused-memory-level {a['--empty-unused-memory-level']}")
    if a.get("--timing-log-level", "0") != "0":
        prod.append(f"--timing-log-level {a['--timing-log-level']}")
    if env.get("CUDA_DEVICE_MAX_CONNECTIONS", "1") != "1":
        prod.append(f"CUDA_DEVICE_MAX_CONNECTIONS={env['CUDA_DEVICE_MAX_CONNECTIONS']}")
    if env.get("PYTORCH_CUDA_ALLOC_CONF"):
        notes.append(f"PYTORCH_CUDA_ALLOC_CONF={env['PYTORCH_CUDA_ALLOC_CONF']}")
    last = max((int(k) for k in golden.get("iteration-time", {}).get("values", {})), default=0)
    save = int(a.get("--save-interval", "0") or 0)
    if "--save" in a and save and save <= last:
        prod.append(f"checkpoint saves every {save} iterations inside the {last} measured"
                    + (" (async)" if truthy(a, "--async-save") else ""))
    ttype = top.get("TEST_TYPE", "")
    if ttype:
        notes.append(f"TEST_TYPE {ttype}")
    if truthy(a, "--finetune") or "--load" in a:
        notes.append("starts from a checkpoint where one exists (--load)" if not truthy(a, "--finetune")
                     else "--finetune from a checkpoint")

    step, n_steps, mem = step_stats(golden)
    if step is None:
        raise ValueError(f"{golden_name}: no finite iteration-time after iteration {WARMUP}")
    device, per_node, _ = MACHINES[machine]
    row = {
        "case_id": f"mlf-{fam}-{case}-{machine}",
        "source": f"NVIDIA/Megatron-LM {COMMIT[:8]} {CASES}/{fam}/{case}/{golden_name}",
        "reliability": "B",
        "model": f"{fam}/{case}"[:60],
        "num_layers": L, "hidden_size": h, "ffn_hidden_size": ffn, "num_attention_heads": heads,
        "num_query_groups": groups, "vocab_size": vocab, "seq_length": seq,
        "mlp": "swiglu" if swiglu else "gelu", "norm": norm, "position_embedding": position,
        "tie_word_embeddings": "false" if truthy(a, "--untie-embeddings-and-output-weights") else "true",
        "flash_attention": "true" if flash else "false",
        "device": device, "num_devices": world, "devices_per_node": min(per_node, world),
        "framework": "megatron", "precision": precision, "dp_degree": dp, "fsdp_degree": 1,
        "zero_stage": 1 if truthy(a, "--use-distributed-optimizer") else 0, "tp_degree": tp,
        "sequence_parallel": "true" if truthy(a, "--sequence-parallel") and tp > 1 else "false",
        "pp_degree": pp, "vpp_degree": vpp, "cp_degree": cp, "micro_batch_size": mbs, "global_batch_size": gbs,
        "layer_recompute": recompute, "flops_convention": "unknown",
        "measured_step_time_s": f"{step:.5g}",
        "nvlink_domain_size": world if machine == "gb200" else "",
        "pipeline_layout": layout, "cp_comm_type": a.get("--cp-comm-type", "") if cp > 1 else "",
        "fp8_param_gather": "true" if truthy(a, "--fp8-param-gather") else "",
        "recompute_num_layers": r_num, "recompute_method": r_method, "recompute_modules": r_modules,
        "tp_comm_overlap": "true" if truthy(a, "--tp-comm-overlap") else "false",
        "cuda_graphs": graphs, "cuda_graph_scope": scope,
        "overlap_grad_reduce": "true" if truthy(a, "--overlap-grad-reduce") else "false",
        # ModelParallelConfig.microbatch_group_size_per_vp_stage: read by the
        # interleaved schedule only (schedules.py forward_backward_pipelining_
        # with_interleaving); empty: its default, the pipeline size
        "microbatch_group_size": a.get("--microbatch-group-size-per-virtual-pipeline-stage", "")
        if pp > 1 and vpp > 1 else "",
        "software": f"Megatron-LM {COMMIT[:8]} (functional tests, dev container)",
        "mtp_layers": mtp or "", "head_dim": head_dim or "",
        "qk_norm": "true" if truthy(a, "--qk-layernorm") and not mla else "false",
        "linear_bias": "false" if truthy(a, "--disable-bias-linear") else "true",
        "dropout": "true" if dropout else "false",
        "max_position_embeddings": a.get("--max-position-embeddings", "") if position == "learned" else "",
    }
    row.update(moe)
    row.update(att)
    if mem is not None and pp == 1:
        row["measured_mem_gib"] = f"{mem:.4f}"
        row["measured_mem_kind"] = "allocated"
    elif mem is not None:
        notes.append(f"mem-max-allocated-bytes {mem:.3f} GiB is the last rank's (last pipeline stage; "
                     "global_vars.py:241), not compared: apsearch's mem_allocated is the largest rank's")
    if truthy(a, "--overlap-param-gather"):
        notes.append("--overlap-param-gather")
    notes.insert(0, f"{world} GPUs from the CI recipe {short}; step time median of {n_steps} iterations "
                    f"after the first {WARMUP}")
    if prod:
        notes.append("not as in production: " + ", ".join(prod))
    row["notes"] = "; ".join(notes)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror", default=MIRROR)
    ap.add_argument("--commit", default=COMMIT)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                                  "tests/fixtures/heldout/megatron_lm_functional.csv"))
    ap.add_argument("--drop", action="append", default=[],
                    help="case_id=reason: leave a row out (a row the estimator refuses)")
    opts = ap.parse_args()
    drops = dict(d.split("=", 1) for d in opts.drop)
    drops.update(DROPS)
    worlds = recipe_world_sizes(opts.mirror, opts.commit)
    files = git(opts.mirror, "ls-tree", "-r", "--name-only", opts.commit,
                *[f"{CASES}/{f}" for f in FAMILIES]).split()
    found = {}
    for f in files:
        m = re.match(rf"{CASES}/(\w+)/([^/]+)/golden_values_dev_dgx_(h100|gb200|a100)\.json$", f)
        if m:
            found.setdefault((m[1], m[2]), []).append(m[3])
    rows, skipped = [], []
    for (fam, case), machines in sorted(found.items()):
        text = git(opts.mirror, "show", f"{opts.commit}:{CASES}/{fam}/{case}/model_config.yaml")
        top, a, env = parse_config(text)
        for machine in sorted(machines, key=list(MACHINES).index):
            golden_name = f"golden_values_dev_dgx_{machine}.json"
            try:
                recipes = worlds.get((fam, case), {}).get(MACHINES[machine][2], {})
                sizes = set(recipes.values())
                fallback = False
                if not sizes and fam in ("gpt", "moe") and not case.endswith("_1node") and "release" not in case:
                    # a case no longer named by a recipe: its family's training
                    # recipe for the machine (h100/{gpt,moe}.yaml 1 x 8 GPUs,
                    # gb200/{gpt,moe}.yaml 2 x 4), said in notes, reliability C
                    path = f"tests/test_utils/recipes/{MACHINES[machine][2]}/{fam}.yaml"
                    recipes = {path: w for (f2, _), d in worlds.items() if f2 == fam
                               for p2, w in d.get(MACHINES[machine][2], {}).items() if p2 == path}
                    sizes, fallback = set(recipes.values()), True
                if not sizes:
                    raise ValueError(f"no CI recipe under tests/test_utils/recipes/{MACHINES[machine][2]}/ "
                                     "names the case: GPU count unknown")
                if len(sizes) > 1:
                    raise ValueError(f"recipes disagree on the GPU count: {recipes}")
                world = sizes.pop()
                short = "/".join(sorted(recipes)[0].split("/")[-2:])
                golden = json.loads(git(opts.mirror, "show", f"{opts.commit}:{CASES}/{fam}/{case}/{golden_name}"))
                row = build_row(fam, case, machine, top, a, env, world, golden_name, short, golden)
                if fallback:
                    row["reliability"] = "C"
                    row["notes"] = row["notes"].replace(
                        f"from the CI recipe {short}",
                        f"assumed from the CI recipe {short} (no recipe names the case at {opts.commit[:8]})")
                if row["case_id"] in drops:
                    raise ValueError("dropped: " + drops[row["case_id"]])
                rows.append(row)
            except (ValueError, KeyError) as e:
                reason = str(e) if isinstance(e, ValueError) else f"missing argument {e}"
                skipped.append((fam, case, machine, reason))
    for fam, case, machine, reason in skipped:
        print(f"skipped {fam}/{case} [{machine}]: {reason}", file=sys.stderr)
    with open(opts.out, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=HEADER, lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in HEADER})
    by = {}
    for r in rows:
        key = (r["case_id"].split("-")[1], r["device"])
        by[key] = by.get(key, 0) + 1
    print(f"wrote {len(rows)} rows to {os.path.relpath(opts.out)}, skipped {len(skipped)} (case, machine) "
          f"pairs", file=sys.stderr)
    for k, n in sorted(by.items()):
        print(f"  {k[0]:8s} {k[1]:16s} {n}", file=sys.stderr)


# Rows the estimator refuses although the script states them as the YAML
# says (case_id -> the refusal); filled in after running `apsearch validate`.
_MLA_BIAS = "apsearch refuses: model.qkv_bias not modelled with MLA (the case keeps Megatron's linear biases)"
DROPS = {
    "mlf-gpt-gpt3_mcore_te_tp2_pp2_mla-h100": _MLA_BIAS,
    "mlf-gpt-gpt3_mcore_te_tp2_pp2_mla-gb200": _MLA_BIAS,
    "mlf-gpt-gpt3_mcore_te_tp2_pp2_mla-a100": _MLA_BIAS,
}

if __name__ == "__main__":
    main()
