/*
 * attnres.c -- Kimi K3's block attention residuals (AttnRes): parameters,
 * saved bytes, memory traffic.
 *
 * NeMo AutoModel nemo_automodel/components/models/kimi_k3/model.py @
 * 36044ad3 (KimiDecoderLayer._forward_attn_residual l.1295-1345,
 * _apply_attn_res l.1184-1197, KimiK3TextModel.forward l.1597-1634):
 * the stream keeps block_residual, the layer inputs at the starts of
 * blocks of attn_res_block_size = B layers, and a running sum.  Layer i
 * (0-based) mixes its attention input from the blocks so far and the
 * running sum (when there is a block: not on layer 0), appends its input
 * as a new block when i % B == 0, then mixes its MLP input from the blocks
 * and the sum again; the model's output is mixed once more before the
 * final norm.  A mix of n values (blocks + the sum) per token:
 *     values = cat(blocks, sum)           [n, h] bf16
 *     v = values.float()                  fp32
 *     keys = v * rsqrt(mean(v^2) + eps)   fp32 (RMSNorm without weight)
 *     p = softmax(sum(keys * (w_norm w_proj), -1))   [n]
 *     out = (p @ v).to(bf16)              [h]
 * Weights: per layer two RMSNorms (h) and two projections h -> 1; the
 * model's output mix one of each.
 */
#include "internal.h"

/** Bytes one mix of n values saves per token for backward, per value:
 *  pow's input v and the product's keys, fp32 h each (mul saves its
 *  inputs, matmul its v, the same tensor), plus rsqrt's and softmax's
 *  fp32 outputs, one a value. */
#define APS_ATTNRES_SAVED_PER_ELEM (2.0 * APS_FP32_BYTES)
#define APS_ATTNRES_SAVED_PER_VALUE (2.0 * APS_FP32_BYTES)
/** Memory traffic of one mix in eager PyTorch, bytes per value and
 *  element of h (read + write): cat 2 + 2, float() 2 + 4, pow 4 + 4,
 *  mean 4, the norm's multiply 4 + 4, the score multiply 4 + 4, its sum
 *  4, the matmul's read of v 4. */
#define APS_ATTNRES_TRAFFIC_PER_ELEM 46.0
/** ... and per element of h of the output: the matmul's fp32 write 4, the
 *  cast's read 4 and write 2. */
#define APS_ATTNRES_TRAFFIC_OUT 10.0

bool aps_model_has_attnres(const aps_model *m)
{
    return m->attn_res_block_size > 0;
}

/** Blocks in block_residual when layer i starts (0-based): one per block
 *  start among layers 0 .. i - 1. */
static double blocks_before(int64_t i, int64_t B)
{
    return i == 0 ? 0.0 : (double)((i - 1) / B + 1);
}

void aps_attnres_mixes(const aps_model *m, double *mixes, double *values)
{
    *mixes = *values = 0.0;
    if (!aps_model_has_attnres(m))
        return;
    int64_t B = m->attn_res_block_size, L = m->num_layers;
    for (int64_t i = 0; i < L; i++) {
        double nb = blocks_before(i, B);
        if (nb > 0) { /* the attention input */
            *mixes += 1.0;
            *values += nb + 1.0;
        }
        nb += i % B == 0 ? 1.0 : 0.0;
        *mixes += 1.0; /* the MLP input */
        *values += nb + 1.0;
    }
    /* the output: every block and the sum */
    *mixes += 1.0;
    *values += (double)((L + B - 1) / B) + 1.0;
}

double aps_attnres_layer_params(const aps_model *m)
{
    return aps_model_has_attnres(m) ? 4.0 * (double)m->hidden_size : 0.0;
}

double aps_attnres_model_params(const aps_model *m)
{
    return aps_model_has_attnres(m) ? 2.0 * (double)m->hidden_size : 0.0;
}

double aps_attnres_saved_per_token(const aps_model *m)
{
    double mixes, values;
    aps_attnres_mixes(m, &mixes, &values);
    double h = (double)m->hidden_size;
    return values * (APS_ATTNRES_SAVED_PER_ELEM * h +
                     APS_ATTNRES_SAVED_PER_VALUE) /
           (double)m->num_layers;
}

double aps_attnres_traffic_per_token(const aps_model *m)
{
    double mixes, values;
    aps_attnres_mixes(m, &mixes, &values);
    double h = (double)m->hidden_size;
    return (values * APS_ATTNRES_TRAFFIC_PER_ELEM + mixes * APS_ATTNRES_TRAFFIC_OUT) *
           h / (double)m->num_layers;
}

double aps_attnres_kept_per_token(const aps_model *m)
{
    if (!aps_model_has_attnres(m))
        return 0.0;
    /* the block_residual inputs of checkpointed layers: one tensor per
     * size 1 .. (the last layer's), each shared by its block's layers */
    int64_t B = m->attn_res_block_size, L = m->num_layers;
    double h = (double)m->hidden_size, top = blocks_before(L - 1, B);
    double stack = APS_ACT_BYTES * h * top * (top + 1.0) / 2.0;
    /* the output mix runs outside the layers: its saved set stays */
    double out = ((double)((L + B - 1) / B) + 1.0) *
                 (APS_ATTNRES_SAVED_PER_ELEM * h + APS_ATTNRES_SAVED_PER_VALUE);
    return (stack + out) / (double)L;
}
