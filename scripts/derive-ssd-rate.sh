#!/usr/bin/env bash
# Derives Mamba-2's SSD scan rate in training (APS_SSD_ELEMS_PER_HBM_BYTE and
# APS_SSD_SCAN_RATE_BLACKWELL, src/core/internal.h) from the one published
# cross-device training measurement of a pure Mamba-2 model:
# state-spaces/mamba issue 904 (tolleybot, 2026-04-06), "Training
# throughput ... d_model=2048, n_layers=48, batch=4, bf16, seq_len=4096":
# Mamba2 TFLOP/s A100 102.5, H200 239.2, GB200 360.4 (one GPU's work).
#
# Per device: the measured step is tokens x F / (TFLOP/s), with F the
# FLOPs per token the issue counted, not stated: taken as the mean of 6N
# (N = parameters) and apsearch's own model FLOPs, which differ by 6 %.
# apsearch's estimate of the same job with the scan free (ssd_scan_rate
# 1e29: GEMMs, norms, conv, gated norm, loss, optimizer) leaves the scan
# its time; the scan's forward rate is then 3 x E / that time (backward
# twice the forward, as apsearch prices it), E = layers x tokens x d_inner
# x d_state state elements.  Printed per device: the rate, and the rate
# per byte/s of HBM bandwidth.  Needs jq.  APS_BIN: the binary (default
# build/apsearch of this tree).
# Dropout: off, as in the measured run (mamba_ssm's MixerModel has no
# dropout module).  Before 2026-12-06 the constants were derived with
# Megatron's default dropout on (which a config stating no dropout then
# took): H200 0.960 per B/s, A100 1.013, GB200 5.088e12, 2-3 % above these;
# APS_SSD_DROPOUT=true reproduces them.
#   scripts/derive-ssd-rate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${APS_BIN:-./build/apsearch}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# mamba_ssm's MambaConfig and Mamba2 defaults (mamba_ssm/models/config_mamba.py,
# modules/mamba2.py): d_state 128, expand 2, headdim 64, ngroups 1, d_conv 4,
# chunk_size 256, vocab 50277 padded to a multiple of 8, tied embeddings.
cat > "$tmp/mamba2-issue904.json" <<'EOF'
{"model_type": "mamba2", "hidden_size": 2048, "num_hidden_layers": 48,
 "state_size": 128, "expand": 2, "head_dim": 64, "n_groups": 1,
 "num_heads": 64, "chunk_size": 256, "conv_kernel": 4, "vocab_size": 50280,
 "tie_word_embeddings": true, "use_bias": false, "use_conv_bias": true,
 "layer_norm_epsilon": 1e-5}
EOF
tokens=$((4 * 4096))
elems=$((48 * tokens * 4096 * 128))
printf '%-16s %9s %10s %10s %10s %12s %8s\n' device TFLOP/s step_s noscan_s scan_s rate_el/s el/B/s
# device, the issue's TFLOP/s, the preset's hbm_bandwidth (B/s, src/core/presets.c)
for row in a100-sxm4-80gb:102.5:2.039e12 h200-sxm-141gb:239.2:4.8e12 gb200:360.4:8e12; do
  IFS=: read -r dev tf hbm <<<"$row"
  "$bin" estimate --model "$tmp/mamba2-issue904.json" --cluster "$dev:1x1" -q --format json \
      --set training.global_batch_size=4 --set training.seq_length=4096 \
      --set training.framework=megatron --set training.precision=bf16 \
      --set training.dropout="${APS_SSD_DROPOUT:-false}" \
      --strategy micro_batch_size=4,layer_recompute=none,zero_stage=0 \
      --set cluster.device.ssd_scan_rate=1e29 | jq -r --arg dev "$dev" --argjson tf "$tf" \
    --argjson tokens "$tokens" --argjson elems "$elems" --argjson hbm "$hbm" '.estimate as $e
    | ($e.model_flops_per_step / $tokens) as $fa | (6 * $e.params_total) as $f6
    | ((($fa + $f6) / 2) * $tokens / ($tf * 1e12)) as $step
    | ($step - $e.step_time) as $scan
    | (3 * $elems / $scan) as $rate
    | "\($dev)\t\($tf)\t\($step)\t\($e.step_time)\t\($scan)\t\($rate)\t\($rate / $hbm)"'
done | awk -F'\t' '{ printf "%-16s %9s %10.4f %10.4f %10.4f %12.4g %8.3f\n", $1, $2, $3, $4, $5, $6, $7 }'
