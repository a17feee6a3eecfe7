/*
 * test_dsv4.c -- DeepSeek-V4 (src/core/dsv4.c): exact parameter counts
 * module by module as transformers builds the model (src/transformers/
 * models/deepseek_v4/modeling_deepseek_v4.py @ 36145589), one CSA layer's
 * costs by hand, validation and the strategies refused.
 *
 * deepseek-ai/DeepSeek-V4-Flash (tests/fixtures/heldout_configs): h 4096,
 * 43 layers (compress_ratios: 2 sliding, 21 CSA of rate 4, 20 HCA of rate
 * 128), 64 query heads of 512, one KV head, q_lora_rank 1024, o_groups 8 x
 * o_lora_rank 1024, indexer 64 x 128 (top-512), hc_mult 4; 256 experts of
 * 2048 (top 6) and one shared expert of 2048 on every layer; vocab 129280
 * untied.  Hand counts:
 *   attention: q_a 4096 x 1024 = 4,194,304, q_a_norm 1024, q_b 1024 x
 *     32768 = 33,554,432, kv 4096 x 512 = 2,097,152, kv_norm 512, o_a
 *     8 x 1024 x 4096 = 33,554,432, o_b 8192 x 4096 = 33,554,432, sinks
 *     64 -> 106,956,352;
 *   CSA compressor: kv and gate 2 x 4096 x 1024, position_bias 4 x 1024,
 *     kv_norm 512; its indexer: kv and gate 2 x 4096 x 256,
 *     position_bias 4 x 256, kv_norm 128, q_b 1024 x 8192, weights_proj
 *     4096 x 64 -> 19,142,272;
 *   HCA compressor: kv and gate 2 x 4096 x 512, position_bias 128 x 512,
 *     kv_norm 512 -> 4,260,352;
 *   mHC, two sites: 2 x (24 x 16384 + 24 + 3) = 786,486;
 *   MoE: 256 x 3 x 2048 x 4096 + gate 256 x 4096 + shared 3 x 2048 x 4096
 *     = 6,468,665,344 (active, 6 experts: 177,209,344); norms 2 x 4096;
 *   layers: 43 x (106,956,352 + 786,486 + 8,192 + 6,468,665,344)
 *     + 21 x 19,142,272 + 20 x 4,260,352 = 283,273,098,834;
 *   embedding and lm_head 129280 x 4096 = 529,530,880 each, final norm
 *     4096, hc_head 4 x 16384 + 4 + 1 = 65,541
 *   -> 284,332,230,231 total, 13,799,622,231 active (the card: 284B, 13B);
 *   MTP (vLLM deepseek_v4_mtp.py @ 45292767): one sliding layer
 *     6,576,416,374, enorm, hnorm, shared_head.norm 3 x 4096, e_proj and
 *     h_proj 2 x 4096^2, hc_head 65,541 and the embedding and head copies
 *     -> 7,669,110,395 (318,592,635 active).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h"

#define FLASH_TOTAL 284332230231.0
#define FLASH_ACTIVE 13799622231.0
#define FLASH_LAYERS 283273098834.0
#define FLASH_MTP 7669110395.0
#define FLASH_MTP_ACTIVE 318592635.0
#define FLASH_CSA 19142272.0
#define FLASH_HCA 4260352.0
#define FLASH_HC 786486.0
#define FLASH_HC_HEAD 65541.0
/* deepseek-ai/DeepSeek-V4-Pro's shapes (nvidia/DeepSeek-V4-Pro-NVFP4's
 * config.json, tests/fixtures/heldout_configs): the card's 1.6T / 49B */
#define PRO_TOTAL 1572997179491.0
#define PRO_ACTIVE 49779058787.0

/** DeepSeek-V4-Flash as hf.lua reads it. */
static void fx_dsv4_flash(aps_model *m)
{
    fx_llama(m, "dsv4-flash", 43, 4096, 64, 1, 2048, 129280);
    m->head_dim = 512;
    m->q_lora_rank = 1024;
    m->sliding_window = 128;
    m->attention_sinks = true;
    m->rotary_percent = 0.125;
    m->glu_clamp = 10.0;
    m->num_experts = 256;
    m->experts_per_token = 6;
    m->moe_ffn_hidden_size = 2048;
    m->shared_expert_ffn_hidden_size = 2048;
    m->index_n_heads = 64;
    m->index_head_dim = 128;
    m->index_topk = 512;
    m->hc_mult = 4;
    m->hc_sinkhorn_iters = 20;
    m->o_groups = 8;
    m->o_lora_rank = 1024;
    m->csa_layers = 21;
    m->hca_layers = 20;
    m->csa_compress_rate = 4;
    m->hca_compress_rate = 128;
    m->moe_hash_layers = 3;
    m->mtp_layers = 1;
    fx_validate(m);
}

static void test_dsv4_params_flash(void **state)
{
    (void)state;
    aps_model m;
    fx_dsv4_flash(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, FLASH_TOTAL);
    ASSERT_DBL_EXACT(pc.active, FLASH_ACTIVE);
    ASSERT_DBL_EXACT(pc.layers, FLASH_LAYERS);
    ASSERT_DBL_EXACT(pc.final_norm, 4096.0 + FLASH_HC_HEAD);
    ASSERT_DBL_EXACT(pc.mtp, FLASH_MTP);
    ASSERT_DBL_EXACT(pc.mtp_active, FLASH_MTP_ACTIVE);
    ASSERT_DBL_EXACT(aps_dsv4_hc_layer_params(&m), FLASH_HC);
    ASSERT_DBL_EXACT(aps_dsv4_hc_head_params(&m), FLASH_HC_HEAD);
    /* a CSA layer over an HCA layer: their compressors' difference */
    aps_model c = m, h = m;
    c.csa_layers = 1, c.hca_layers = 0, c.num_layers = 1, c.moe_hash_layers = 0;
    h.csa_layers = 0, h.hca_layers = 1, h.num_layers = 1, h.moe_hash_layers = 0;
    ASSERT_DBL_EXACT(aps_dsv4_layers_delta_params(&c) -
                         aps_dsv4_layers_delta_params(&h),
                     FLASH_CSA - FLASH_HCA);
}

static void test_dsv4_params_pro(void **state)
{
    (void)state;
    aps_model m;
    fx_dsv4_flash(&m);
    m.num_layers = 61;
    m.hidden_size = 7168;
    m.num_attention_heads = 128;
    m.q_lora_rank = 1536;
    m.o_groups = 16;
    m.index_topk = 1024;
    m.num_experts = 384;
    m.moe_ffn_hidden_size = 3072;
    m.shared_expert_ffn_hidden_size = 3072;
    m.ffn_hidden_size = 3072;
    m.csa_layers = 30;
    m.hca_layers = 31;
    fx_validate(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, PRO_TOTAL);
    ASSERT_DBL_EXACT(pc.active, PRO_ACTIVE);
}

/* One CSA layer (a one-layer model of Flash's widths, every layer CSA)
 * at S = 4096: 1024 compressed entries, the top-512 of the causal ones,
 * 512 - 512^2 / (2 x 1024) = 384 keys per query; HCA: 4096 / 128 / 2 =
 * 16.  The core over them is 2 T 384 a (d + d) FLOPs; the indexer's
 * forward 2 S (kv, gate 2 x 4096 x 256 + q_b 1024 x 8192 + weights 4096
 * x 64) + 2 S (S / 8) 64 x 128 = 122,406,567,936 FLOPs; the trained
 * forward over the GQA layer of 64 heads of 512 and one KV head: 2 S
 * (V4's projections 106,954,752 - GQA's 272,629,760 + the compressor's
 * 8,388,608) + the core 2 S 384 x 64 x 1024 + S x mHC's 2 (2 x 393,216 +
 * 32,768 + 131,072 + 32,768 + 1,280) = -1,074,268,209,152 FLOPs. */
static void test_dsv4_csa_layer_costs(void **state)
{
    (void)state;
    aps_model m;
    fx_dsv4_flash(&m);
    m.num_layers = 1;
    m.csa_layers = 1;
    m.hca_layers = 0;
    m.moe_hash_layers = 0;
    m.mtp_layers = 0;
    fx_validate(&m);
    double S = 4096.0;
    ASSERT_DBL_EXACT(aps_dsv4_compressed_keys(&m, true, S, true), 384.0);
    ASSERT_DBL_EXACT(aps_dsv4_compressed_keys(&m, false, S, true), 16.0);
    ASSERT_DBL_EXACT(aps_dsv4_indexer_flops(&m, S), 122406567936.0);
    ASSERT_DBL_EXACT(aps_dsv4_flops_delta(&m, S, true), -1074268209152.0);
    /* the layer cost on one rank, micro-batch 1: the core's time, the
     * parameters' difference (106,956,352 - 64 sinks + the compressor
     * + mHC, against GQA's 272,629,760 weights) */
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 8, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    aps_moe_cost mc;
    aps_moe_layer_cost(&m, &c, &t, &s, &mc);
    double rate = c.device.peak_flops_bf16 * aps_attention_efficiency(&c.device, &t);
    ASSERT_REL(mc.mla_attn_fwd, 2.0 * S * 384.0 * 64.0 * 1024.0 / rate, 1e-12);
    ASSERT_DBL_EXACT(mc.mla_params,
                     106956352.0 - 64.0 + FLASH_CSA + FLASH_HC - 272629760.0);
    assert_true(mc.dsa_indexer_fwd > 0);
    /* mHC's saved streams: 2 sites x (2 + 4) bytes x 4 x 4096 per token
     * and its pre, post, comb; more streams keep more */
    aps_model wide = m;
    wide.hc_mult = 8;
    fx_validate(&wide);
    aps_moe_cost mw;
    aps_moe_layer_cost(&wide, &c, &t, &s, &mw);
    ASSERT_REL(mw.mla_act - mc.mla_act,
               S * 2.0 * ((2.0 + 4.0) * 4.0 * 4096.0 +
                          4.0 * (10.0 * 8.0 - 6.0 * 4.0)), 1e-12);
}

static void test_dsv4_validate(void **state)
{
    (void)state;
    aps_model m;
    char err[256] = "";
    fx_dsv4_flash(&m);
    m.o_groups = 3;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.o_groups: 3 does not divide");
    fx_dsv4_flash(&m);
    m.num_query_groups = 2;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "num_query_groups (one shared KV head)");
    fx_dsv4_flash(&m);
    m.csa_layers = 40;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.csa_layers: 60 layers, more than num_layers 43");
    fx_dsv4_flash(&m);
    m.hc_sinkhorn_iters = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.hc_sinkhorn_iters: must be in [1,");
    fx_llama(&m, "plain", 8, 4096, 32, 8, 14336, 32000);
    m.o_groups = 8;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "model.o_groups: 8 given without hc_mult");
    fx_dsv4_flash(&m);
    m.qk_norm = true;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_ENOTIMPL);
    ASSERT_HAS(err, "model.qk_norm: not modelled with DeepSeek-V4");
}

static void test_dsv4_strategies(void **state)
{
    (void)state;
    aps_model m;
    fx_dsv4_flash(&m);
    aps_cluster c;
    fx_h100(&c, 8);
    aps_training t;
    fx_training(&t, 64, 4096);
    aps_strategy s;
    aps_strategy_defaults(&s);
    s.dp_degree = 8;
    s.ep_degree = 8;
    char msg[APS_REASON_LEN] = "";
    ASSERT_REASON(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                  APS_REASON_NONE, msg);
    s.dp_degree = 4;
    s.ep_degree = 4;
    s.tp_degree = 2;
    ASSERT_REASON(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                  APS_REASON_NOT_MODELLED, msg);
    ASSERT_HAS(msg, "DeepSeek-V4 with tp_degree > 1");
    s.tp_degree = 1;
    s.cp_degree = 2;
    s.ep_degree = 4;
    ASSERT_REASON(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                  APS_REASON_NOT_MODELLED, msg);
    ASSERT_HAS(msg, "DeepSeek-V4 with cp_degree > 1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dsv4_params_flash),
        cmocka_unit_test(test_dsv4_params_pro),
        cmocka_unit_test(test_dsv4_csa_layer_costs),
        cmocka_unit_test(test_dsv4_validate),
        cmocka_unit_test(test_dsv4_strategies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
