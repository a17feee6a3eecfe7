/*
 * names.c -- stable names of status codes, filter reasons and breakdown
 * categories.  The strings are part of the output schema (docs/outputs.md):
 * change them only with a schema_version bump.
 */
#include <stdio.h>
#include <string.h>
#include "internal.h"

void aps_fmt(char *msg, size_t n, const char *fmt, ...)
{
    if (msg == NULL || n == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(msg, n, fmt, ap);
    va_end(ap);
    /* cut: said, not silently dropped (the fix a message ends with) */
    if (len >= 0 && (size_t)len >= n && n > 4)
        memcpy(msg + n - 4, "...", 4);
}

static const char *const reason_codes[APS_REASON_COUNT] = {
    [APS_REASON_NONE] = "NONE",
    [APS_REASON_INVALID_DEGREE] = "INVALID_DEGREE",
    [APS_REASON_TP_DIVISIBILITY] = "TP_DIVISIBILITY",
    [APS_REASON_CP_DIVISIBILITY] = "CP_DIVISIBILITY",
    [APS_REASON_PP_DIVISIBILITY] = "PP_DIVISIBILITY",
    [APS_REASON_PP_PARTITION] = "PP_PARTITION",
    [APS_REASON_VPP_INVALID] = "VPP_INVALID",
    [APS_REASON_BATCH_DIVISIBILITY] = "BATCH_DIVISIBILITY",
    [APS_REASON_DEVICE_COUNT] = "DEVICE_COUNT",
    [APS_REASON_IDLE_DEVICES] = "IDLE_DEVICES",
    [APS_REASON_HSDP_INVALID] = "HSDP_INVALID",
    [APS_REASON_ZERO_STAGE_INVALID] = "ZERO_STAGE_INVALID",
    [APS_REASON_MEMORY_LIMIT] = "MEMORY_LIMIT",
    [APS_REASON_FRAMEWORK_UNSUPPORTED] = "FRAMEWORK_UNSUPPORTED",
    [APS_REASON_EP_DIVISIBILITY] = "EP_DIVISIBILITY",
    [APS_REASON_NOT_MODELLED] = "NOT_MODELLED",
};

static const char *const recompute_modules[APS_RCM_COUNT] = {
    "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
    "shared_experts",
};

const char *aps_recompute_module_name(int b)
{
    return b >= 0 && b < APS_RCM_COUNT ? recompute_modules[b] : NULL;
}

static const char *const offload_modules[APS_OFM_COUNT] = {
    "expert_fc1", "moe_act", "fused_group_mlp", "core_attn", "attn_proj",
};

const char *aps_offload_module_name(int b)
{
    return b >= 0 && b < APS_OFM_COUNT ? offload_modules[b] : NULL;
}

const char *aps_reason_code(aps_reason r)
{
    if ((int)r < 0 || r >= APS_REASON_COUNT)
        return "UNKNOWN";
    return reason_codes[r];
}

static const char *const mem_names[APS_MEM_COUNT] = {
    [APS_MEM_PARAMS] = "params",
    [APS_MEM_GRADS] = "grads",
    [APS_MEM_OPTIMIZER_STATES] = "optimizer_states",
    [APS_MEM_ACTIVATIONS] = "activations",
    [APS_MEM_COMM_TP] = "comm_buffers_tp",
    [APS_MEM_COMM_FSDP] = "comm_buffers_fsdp",
    [APS_MEM_COMM_DP] = "comm_buffers_dp",
    [APS_MEM_COMM_PP] = "comm_buffers_pp",
    [APS_MEM_COMM_CP] = "comm_buffers_cp",
    [APS_MEM_LOGITS_LOSS] = "logits_loss",
    [APS_MEM_RESERVED] = "reserved",
    [APS_MEM_COMM_EP] = "comm_buffers_ep",
    [APS_MEM_WORKSPACES] = "workspaces",
};

const char *aps_mem_category_name(aps_mem_category c)
{
    if ((int)c < 0 || c >= APS_MEM_COUNT)
        return NULL;
    return mem_names[c];
}

static const char *const perf_names[APS_PERF_COUNT] = {
    [APS_PERF_COMPUTE_FWD] = "compute_fwd",
    [APS_PERF_COMPUTE_BWD] = "compute_bwd",
    [APS_PERF_RECOMPUTE] = "recompute",
    [APS_PERF_TP_COMM] = "tp_comm",
    [APS_PERF_CP_COMM] = "cp_comm",
    [APS_PERF_PP_P2P] = "pp_p2p",
    [APS_PERF_PP_BUBBLE] = "pp_bubble",
    [APS_PERF_FSDP_ALLGATHER] = "fsdp_allgather",
    [APS_PERF_FSDP_REDUCESCATTER] = "fsdp_reducescatter",
    [APS_PERF_DP_GRAD_SYNC] = "dp_grad_sync",
    [APS_PERF_HSDP_REPLICATE_SYNC] = "hsdp_replicate_sync",
    [APS_PERF_OPTIMIZER] = "optimizer",
    [APS_PERF_OFFLOAD] = "activation_offload",
    [APS_PERF_EP_COMM] = "ep_comm",
    [APS_PERF_HOST] = "host_launch",
    [APS_PERF_KERNEL_GAPS] = "kernel_gaps",
};

const char *aps_perf_category_name(aps_perf_category c)
{
    if ((int)c < 0 || c >= APS_PERF_COUNT)
        return NULL;
    return perf_names[c];
}

const char *aps_status_name(aps_status s)
{
    switch (s) {
    case APS_OK: return "OK";
    case APS_EINVAL: return "EINVAL";
    case APS_ENOTIMPL: return "ENOTIMPL";
    case APS_ERANGE: return "ERANGE";
    case APS_ENOMEM: return "ENOMEM";
    }
    return "UNKNOWN";
}

bool aps_text_ok(const char *s, size_t cap)
{
    /* Printable UTF-8: no control characters (names end up in comment
     * lines of generated shell, TOML and YAML files and in JSON). */
    size_t i = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (i < cap && p[i] != 0) {
        unsigned char c = p[i];
        int extra;
        if (c < 0x20 || c == 0x7f)
            return false;
        if (c < 0x80)
            extra = 0;
        else if ((c & 0xe0) == 0xc0 && c >= 0xc2)
            extra = 1;
        else if ((c & 0xf0) == 0xe0)
            extra = 2;
        else if ((c & 0xf8) == 0xf0 && c <= 0xf4)
            extra = 3;
        else
            return false;
        for (int k = 1; k <= extra; k++)
            if (i + (size_t)k >= cap || (p[i + (size_t)k] & 0xc0) != 0x80)
                return false;
        i += (size_t)extra + 1;
    }
    return i < cap; /* NUL-terminated within the buffer */
}

static const char *const precision_names[] = {
    [APS_PREC_BF16] = "bf16", [APS_PREC_FP16] = "fp16", [APS_PREC_FP8] = "fp8",
    [APS_PREC_MXFP8] = "mxfp8", [APS_PREC_NVFP4] = "nvfp4",
};

const char *aps_precision_name(aps_precision p)
{
    if ((unsigned)p >= sizeof precision_names / sizeof precision_names[0])
        return "UNKNOWN";
    return precision_names[p];
}

static const char *const framework_names[] = {
    [APS_FW_MEGATRON] = "megatron", [APS_FW_FSDP2] = "fsdp2",
    [APS_FW_FSDP] = "fsdp", [APS_FW_DEEPSPEED] = "deepspeed",
    [APS_FW_AUTOMODEL] = "automodel",
};

const char *aps_framework_name(aps_framework f)
{
    if ((unsigned)f >= sizeof framework_names / sizeof framework_names[0])
        return "UNKNOWN";
    return framework_names[f];
}

static const char *const pp_schedule_names[] = {
    [APS_PP_1F1B] = "1f1b",
    [APS_PP_INTERLEAVED_ZB] = "interleaved_zero_bubble",
    [APS_PP_ZBV] = "zbv_zero_bubble",
    [APS_PP_DUALPIPEV] = "dualpipev",
};

const char *aps_pp_schedule_name(aps_pp_schedule s)
{
    if ((unsigned)s >= sizeof pp_schedule_names / sizeof pp_schedule_names[0])
        return "UNKNOWN";
    return pp_schedule_names[s];
}

static const char *const cp_comm_names[] = {
    [APS_CP_P2P] = "p2p",
    [APS_CP_ALL_GATHER] = "all_gather",
    [APS_CP_A2A] = "a2a",
};

const char *aps_cp_comm_name(aps_cp_comm c)
{
    if ((unsigned)c >= sizeof cp_comm_names / sizeof cp_comm_names[0])
        return "UNKNOWN";
    return cp_comm_names[c];
}

static const char *const pipeline_split_names[] = {
    [APS_SPLIT_EVEN] = "even",
    [APS_SPLIT_EMBEDDING_LOSS] = "embedding_loss",
    [APS_SPLIT_DEEPSPEED_TYPE] = "deepspeed_type",
    [APS_SPLIT_FILL_LAST] = "fill_last",
    [APS_SPLIT_FILL_FIRST] = "fill_first",
};

const char *aps_pipeline_split_name(aps_pipeline_split s)
{
    if ((unsigned)s >= sizeof pipeline_split_names /
                           sizeof pipeline_split_names[0])
        return "UNKNOWN";
    return pipeline_split_names[s];
}
