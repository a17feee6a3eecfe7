/*
 * test_model.c -- src/core/model.c: validation and parameter counts.
 *
 * Published counts (shared/models/README.md; Hugging Face model cards /
 * safetensors metadata) must be reproduced to the parameter.  Each count
 * is also hand-derived below from MODELING.md s.2: per layer Q h*a*d, K and
 * V h*k*d each, O a*d*h, MLP 3*h*f (gated) or 2*h*f, norms; embedding V*h,
 * output V*h unless tied, final norm.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"
#include "../../src/core/internal.h" /* aps_dsa_*: the indexer terms */

static double total_params(const aps_model *m)
{
    aps_param_counts pc;
    aps_model_param_counts(m, &pc);
    return pc.total;
}

/* Llama-3.1-8B, d = 4096/32 = 128, k d = 1024:
 *   Q 4096*4096 = 16,777,216; K, V 4096*1024 = 4,194,304 each; O 16,777,216
 *   -> attention 41,943,040; MLP 3*4096*14336 = 176,160,768;
 *   norms 2*4096 = 8,192 -> per layer 218,112,000; x32 = 6,979,584,000;
 *   embedding + output 2*128256*4096 = 1,050,673,152; final norm 4,096
 *   -> 8,030,261,248 (published). */
static void test_model_params_llama31_8b(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    assert_int_equal(m.head_dim, 128); /* filled in by validate: 4096/32 */
    ASSERT_DBL_EXACT(pc.per_layer, 218112000.0);
    ASSERT_DBL_EXACT(pc.layers, 6979584000.0);
    ASSERT_DBL_EXACT(pc.embedding, 525336576.0);    /* 128256*4096 */
    ASSERT_DBL_EXACT(pc.output_layer, 525336576.0); /* untied */
    ASSERT_DBL_EXACT(pc.final_norm, 4096.0);
    ASSERT_DBL_EXACT(pc.total, 8030261248.0);
    /* matrices only: 41,943,040 + 176,160,768 = 218,103,808 */
    ASSERT_DBL_EXACT(aps_layer_matmul_params(&m), 218103808.0);
}

/* Llama-3.1-70B, d 128, k d 1024:
 *   Q, O 8192^2 = 67,108,864 each; K, V 8192*1024 = 8,388,608 each
 *   -> 150,994,944; MLP 3*8192*28672 = 704,643,072; norms 16,384
 *   -> per layer 855,654,400; x80 = 68,452,352,000;
 *   2*128256*8192 = 2,101,346,304; final 8,192 -> 70,553,706,496. */
static void test_model_params_llama31_70b(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_70b(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_layer, 855654400.0);
    ASSERT_DBL_EXACT(pc.total, 70553706496.0);
}

/* Llama-3.1-405B, d 128, k d 1024:
 *   Q, O 16384^2 = 268,435,456 each; K, V 16384*1024 = 16,777,216 each
 *   -> 570,425,344; MLP 3*16384*53248 = 2,617,245,696; norms 32,768
 *   -> per layer 3,187,703,808; x126 = 401,650,679,808;
 *   2*128256*16384 = 4,202,692,608; final 16,384 -> 405,853,388,800. */
static void test_model_params_llama31_405b(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_405b(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_layer, 3187703808.0);
    ASSERT_DBL_EXACT(pc.total, 405853388800.0);
}

/* Llama-2-7B (MHA, k = a = 32):
 *   attention 4*4096^2 = 67,108,864; MLP 3*4096*11008 = 135,266,304;
 *   norms 8,192 -> per layer 202,383,360; x32 = 6,476,267,520;
 *   2*32000*4096 = 262,144,000; final 4,096 -> 6,738,415,616. */
static void test_model_params_llama2_7b(void **state)
{
    (void)state;
    aps_model m;
    fx_llama2_7b(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_layer, 202383360.0);
    ASSERT_DBL_EXACT(pc.total, 6738415616.0);
}

/* Mistral-7B-v0.1: the layers of Llama-3.1-8B (218,112,000 x 32 =
 *   6,979,584,000) with V 32000: 2*32000*4096 = 262,144,000; final 4,096
 *   -> 7,241,732,096. */
static void test_model_params_mistral_7b(void **state)
{
    (void)state;
    aps_model m;
    fx_mistral_7b(&m);
    ASSERT_DBL_EXACT(total_params(&m), 7241732096.0);
}

/* Qwen2.5-7B, d = 3584/28 = 128, k d = 4*128 = 512:
 *   Q, O 3584^2 = 12,845,056 each; K, V 3584*512 = 1,835,008 each
 *   -> 29,360,128; q/k/v biases 3584 + 2*512 = 4,608;
 *   MLP 3*3584*18944 = 203,685,888; norms 7,168 -> per layer 233,057,792;
 *   x28 = 6,525,618,176; 2*152064*3584 = 1,089,994,752; final 3,584
 *   -> 7,615,616,512.  Without the biases: 28*4,608 = 129,024 fewer. */
static void test_model_params_qwen25_7b_qkv_bias(void **state)
{
    (void)state;
    aps_model m;
    fx_qwen25_7b(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_layer, 233057792.0);
    ASSERT_DBL_EXACT(pc.total, 7615616512.0);
    /* the biases do not cost 2 FLOPs/token as a matrix: 233,046,016 */
    ASSERT_DBL_EXACT(aps_layer_matmul_params(&m), 233046016.0);
    m.qkv_bias = false;
    ASSERT_DBL_EXACT(total_params(&m), 7615616512.0 - 129024.0);
}

/* Tied embeddings count once.  Llama-3.2-1B (d 64, k d 512):
 *   Q, O 2048^2 = 4,194,304 each; K, V 2048*512 = 1,048,576 each
 *   -> 10,485,760; MLP 3*2048*8192 = 50,331,648; norms 4,096
 *   -> per layer 60,821,504; x16 = 973,144,064; embedding once
 *   128256*2048 = 262,668,288; final 2,048 -> 1,235,814,400 (published).
 *   Untied it would be 262,668,288 more. */
static void test_model_params_tied_counts_once(void **state)
{
    (void)state;
    aps_model m;
    fx_llama32_1b(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.output_layer, 0.0);
    ASSERT_DBL_EXACT(pc.total, 1235814400.0);
    m.tie_word_embeddings = false;
    ASSERT_DBL_EXACT(total_params(&m), 1235814400.0 + 262668288.0);
}

/* Explicit head_dim, a d != h.  Gemma-2-2B: h 2304, a 8, k 4, d 256
 * (a d = 2048, while h/a = 288):
 *   Q 2304*8*256 = 4,718,592; K, V 2304*4*256 = 2,359,296 each;
 *   O 8*256*2304 = 4,718,592 -> 14,155,776; MLP 3*2304*9216 = 63,700,992;
 *   4 norms 4*2304 = 9,216 -> per layer 77,865,984; x26 = 2,024,515,584;
 *   tied embedding 256000*2304 = 589,824,000; final 2,304
 *   -> 2,614,341,888 (the model card's "2.61B"; hand-derived here).
 * With d = h/a = 288 instead, the attention would be Q, O 2304^2 =
 * 5,308,416 each and K, V 2304*1152 = 2,654,208 each = 15,925,248, so a
 * recomputed head_dim cannot pass. */
static void test_model_params_explicit_head_dim(void **state)
{
    (void)state;
    aps_model m;
    fx_gemma2_2b(&m);
    assert_int_equal(m.head_dim, 256); /* validate keeps an explicit d */
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(aps_layer_matmul_params(&m), 14155776.0 + 63700992.0);
    ASSERT_DBL_EXACT(pc.per_layer, 77865984.0);
    ASSERT_DBL_EXACT(pc.total, 2614341888.0);
}

/* GPT-2 124M: h 768, L 12, a 12, f 3072, V 50257, 1024 learned positions,
 * LayerNorm with bias, all biases, tied.
 *   attention: QKV 3*768^2 = 1,769,472 + bias 2,304; out-proj 589,824 +
 *   bias 768; MLP 2*768*3072 = 4,718,592 + biases 3,072 + 768; two
 *   LayerNorms 2*2*768 = 3,072 -> per layer 7,087,872; x12 = 85,054,464;
 *   wte 50257*768 = 38,597,376 + wpe 1024*768 = 786,432 = 39,383,808;
 *   ln_f 1,536 -> 124,439,808. */
static void test_model_params_gpt2_124m(void **state)
{
    (void)state;
    aps_model m;
    fx_gpt2_124m(&m);
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_layer, 7087872.0);
    ASSERT_DBL_EXACT(pc.embedding, 39383808.0);
    ASSERT_DBL_EXACT(pc.final_norm, 1536.0);
    ASSERT_DBL_EXACT(pc.output_layer, 0.0);
    ASSERT_DBL_EXACT(pc.total, 124439808.0);
    /* matrices only: 1,769,472 + 589,824 + 4,718,592 = 7,077,888 = 12 h^2 */
    ASSERT_DBL_EXACT(aps_layer_matmul_params(&m), 12.0 * 768.0 * 768.0);
}

/* GPT-2 124M's shapes with the norm fields of OLMo 1 and BLOOM: weightless
 * norms count none of the 2 x 12 + 1 LayerNorms (2 x 768 each); an
 * embedding norm adds one LayerNorm (2 x 768) to the embedding and to the
 * first pipeline stage's non-layer parameters. */
static void test_model_params_norm_weightless_and_embedding_norm(void **state)
{
    (void)state;
    aps_model m;
    fx_gpt2_124m(&m);
    m.norm_weightless = true;
    aps_param_counts pc;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_layer, 7087872.0 - 2.0 * 1536.0);
    ASSERT_DBL_EXACT(pc.final_norm, 0.0);
    ASSERT_DBL_EXACT(pc.total, 124439808.0 - 25.0 * 1536.0);
    fx_gpt2_124m(&m);
    m.embedding_norm = true;
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.embedding, 39383808.0 + 1536.0);
    ASSERT_DBL_EXACT(pc.total, 124439808.0 + 1536.0);
    aps_layout lay = {0};
    lay.p = 2;
    lay.t = 1;
    lay.vocab_padded = (double)m.vocab_size;
    double first = aps_stage_nonunit_params(&m, &lay, 0);
    m.embedding_norm = false;
    ASSERT_DBL_EXACT(first - aps_stage_nonunit_params(&m, &lay, 0), 1536.0);
}

/* ---------------------------------------------------------- validation */

static void expect_einval(aps_model *m, const char *field)
{
    char err[256] = "";
    aps_status st = aps_model_validate(m, err, sizeof err);
    if (st != APS_EINVAL)
        fail_msg("expected EINVAL naming %s, got %s (\"%s\")", field,
                 aps_status_name(st), err);
    ASSERT_HAS(err, field);
}

static void test_model_validate_zero_hidden_size(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    m.hidden_size = 0;
    m.head_dim = 0;
    expect_einval(&m, "hidden_size");
}

static void test_model_validate_defaults_name_first_missing_field(void **state)
{
    (void)state;
    aps_model m;
    aps_model_defaults(&m); /* every size 0 */
    expect_einval(&m, "num_layers");
}

static void test_model_validate_kv_heads_not_dividing(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    m.num_query_groups = 5; /* 32 % 5 = 2 */
    expect_einval(&m, "num_query_groups");
}

static void test_model_validate_absurd_size(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    m.hidden_size = INT64_C(1) << 40; /* a byte count typed as a width */
    expect_einval(&m, "hidden_size");
    char err[256] = "";
    aps_model_validate(&m, err, sizeof err);
    ASSERT_HAS(err, "absurd");

    fx_llama31_8b(&m);
    m.vocab_size = INT64_C(1) << 31;
    expect_einval(&m, "vocab_size");
}

static void test_model_validate_head_dim_needed(void **state)
{
    (void)state;
    aps_model m;
    fx_llama(&m, "odd", 2, 4100, 32, 8, 14336, 32000);
    m.head_dim = 0; /* 4100 % 32 = 4: cannot default d */
    expect_einval(&m, "head_dim");
    m.head_dim = 128; /* explicit: fine */
    char err[256] = "";
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
}

static void test_model_validate_learned_positions_need_length(void **state)
{
    (void)state;
    aps_model m;
    fx_gpt2_124m(&m);
    m.max_position_embeddings = 0;
    expect_einval(&m, "max_position_embeddings");
}

static void test_model_validate_negative_and_null(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    m.ffn_hidden_size = -14336;
    expect_einval(&m, "ffn_hidden_size");
    char err[8]; /* short buffer: truncated but NUL-terminated */
    memset(err, 'x', sizeof err);
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_EINVAL);
    assert_int_equal(err[sizeof err - 1], '\0');
    assert_int_equal(aps_model_validate(NULL, NULL, 0), APS_EINVAL);
}

/* RoPE base, scaling and norm epsilon: 0 = not given, else finite and
 * > 0; negative, NaN and infinite values are refused naming the field, and
 * none of them changes a parameter count. */
static void test_model_validate_rope_and_norm_eps(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    double before = total_params(&m);
    m.rope_theta = 500000.0;
    m.rope_scaling_type = APS_ROPE_SCALING_LLAMA3;
    m.rope_scaling_factor = 8.0;
    m.low_freq_factor = 1.0;
    m.high_freq_factor = 4.0;
    m.original_max_position_embeddings = 8192;
    m.norm_eps = 1e-5;
    char err[256] = "";
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    ASSERT_DBL_EXACT(total_params(&m), before);

    struct { const char *f; double *v; } nums[] = {
        {"rope_theta", &m.rope_theta},
        {"rope_scaling_factor", &m.rope_scaling_factor},
        {"low_freq_factor", &m.low_freq_factor},
        {"high_freq_factor", &m.high_freq_factor},
        {"norm_eps", &m.norm_eps},
    };
    double bad[] = {-1.0, NAN, INFINITY};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
            double keep = *nums[i].v;
            *nums[i].v = bad[j];
            expect_einval(&m, nums[i].f);
            *nums[i].v = keep;
        }
    }
    m.original_max_position_embeddings = -8192;
    expect_einval(&m, "original_max_position_embeddings");
    m.original_max_position_embeddings = 8192;
    m.high_freq_factor = 0.5; /* below low_freq_factor 1 */
    expect_einval(&m, "high_freq_factor");
    m.high_freq_factor = 1.0; /* equal: a step (Llama 4 Scout) */
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    m.high_freq_factor = 4.0;

    /* scaling parameters need a scaling type, and a type needs a factor */
    m.rope_scaling_type = APS_ROPE_SCALING_NONE;
    expect_einval(&m, "rope_scaling_factor");
    m.rope_scaling_type = APS_ROPE_SCALING_LINEAR;
    expect_einval(&m, "low_freq_factor");
    m.low_freq_factor = m.high_freq_factor = 0.0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    m.rope_scaling_factor = 0.0;
    expect_einval(&m, "rope_scaling_factor");

    /* yarn's ramp and magnitudes (DeepSeek-V3's config.json: betas 32 and
     * 1, mscale and mscale_all_dim 1): only with yarn, beta_fast above
     * beta_slow, finite and >= 0 */
    m.rope_scaling_type = APS_ROPE_SCALING_YARN;
    m.rope_scaling_factor = 40.0;
    m.original_max_position_embeddings = 4096;
    m.yarn_beta_fast = 32.0;
    m.yarn_beta_slow = 1.0;
    m.yarn_mscale = m.yarn_mscale_all_dim = 1.0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    ASSERT_DBL_EXACT(total_params(&m), before);
    m.yarn_beta_fast = 0.5; /* below beta_slow 1: a ramp running backwards */
    expect_einval(&m, "yarn_beta_fast");
    m.yarn_beta_fast = 1.0; /* equal ends: a step (Kimi-K2's 1 and 1) */
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    m.yarn_beta_fast = 32.0;
    m.yarn_mscale_all_dim = NAN;
    expect_einval(&m, "yarn_mscale_all_dim");
    m.yarn_mscale_all_dim = 1.0;
    m.rope_scaling_type = APS_ROPE_SCALING_LINEAR;
    expect_einval(&m, "yarn_beta_fast");
    m.yarn_beta_fast = m.yarn_beta_slow = 0.0;
    expect_einval(&m, "yarn_mscale");
    /* attention_factor and truncate false (gpt-oss): yarn's too */
    m.yarn_mscale = m.yarn_mscale_all_dim = 0.0;
    m.yarn_attention_factor = 1.2;
    expect_einval(&m, "yarn_attention_factor");
    m.yarn_attention_factor = 0.0;
    m.yarn_no_truncate = true;
    expect_einval(&m, "yarn_no_truncate");
    m.rope_scaling_type = APS_ROPE_SCALING_YARN;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    m.yarn_attention_factor = -1.0;
    expect_einval(&m, "yarn_attention_factor");
    m.yarn_attention_factor = INFINITY;
    expect_einval(&m, "yarn_attention_factor");

    /* all 0: not given, the framework's defaults */
    fx_llama31_8b(&m);
    assert_int_equal(m.rope_theta, 0);
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
}

/* Llama 4's attention and router fields change no parameter count (L2
 * Q/K norms have no weights; NoPE, scores and where they apply are
 * arithmetic) and are refused where they do not belong, naming the field. */
static void test_model_validate_llama4_fields(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    double before = total_params(&m);
    char err[256] = "";
    m.qk_l2_norm = true;
    m.nope_layer_period = 4;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    ASSERT_DBL_EXACT(total_params(&m), before);
    m.qk_norm = true;
    expect_einval(&m, "qk_l2_norm");
    m.qk_norm = false;
    int64_t bad[] = {1, -4, 33};
    for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
        m.nope_layer_period = bad[j];
        expect_einval(&m, "nope_layer_period");
    }
    m.nope_layer_period = 4;
    m.position_embedding = APS_POS_LEARNED;
    m.max_position_embeddings = 8192;
    expect_einval(&m, "nope_layer_period");
    fx_llama31_8b(&m);
    m.attention_chunk_size = -1;
    expect_einval(&m, "attention_chunk_size");
    /* the router fields belong to MoE models; probabilities on the input
     * to top-1 routing */
    fx_llama31_8b(&m);
    m.moe_router_sigmoid = true;
    expect_einval(&m, "moe_router_sigmoid");
    m.moe_router_sigmoid = false;
    m.moe_router_input_probs = true;
    expect_einval(&m, "moe_router_input_probs");
    m.num_experts = 16;
    m.experts_per_token = 2;
    m.moe_ffn_hidden_size = 8192;
    expect_einval(&m, "moe_router_input_probs: needs experts_per_token 1");
    m.experts_per_token = 1;
    m.moe_router_sigmoid = true;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
}

/* rotary_percent (HF partial_rotary_factor; GLM-4.5's config.json 0.5):
 * RoPE over half of each head changes no parameter count; above 1, NaN,
 * negative or without RoPE it is refused naming the field. */
static void test_model_validate_rotary_percent(void **state)
{
    (void)state;
    aps_model m;
    fx_llama31_8b(&m);
    double before = total_params(&m);
    char err[256] = "";
    m.rotary_percent = 0.5;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    ASSERT_DBL_EXACT(total_params(&m), before);
    m.rotary_percent = 1.0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    double bad[] = {1.5, -0.5, NAN, INFINITY};
    for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
        m.rotary_percent = bad[j];
        expect_einval(&m, "rotary_percent");
    }
    m.rotary_percent = 0.5;
    m.position_embedding = APS_POS_ALIBI;
    expect_einval(&m, "rotary_percent");
}


/* ------------------------------------------------ mixture of experts (13)
 * Hand-derived from the `how` column of shared/models/moe/param_counts.csv;
 * the results are that file's total and active columns. */

/* A Llama-shaped MoE: attention and norms as the dense model. */
static void moe_model(aps_model *m, const char *name, int64_t L, int64_t h,
                      int64_t a, int64_t kv, int64_t f, int64_t V)
{
    aps_model_defaults(m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->num_layers = L;
    m->hidden_size = h;
    m->num_attention_heads = a;
    m->num_query_groups = kv;
    m->ffn_hidden_size = f;
    m->vocab_size = V;
}

static void counts_of(aps_model *m, aps_param_counts *pc)
{
    char err[APS_REASON_LEN];
    assert_int_equal(aps_model_validate(m, err, sizeof err), APS_OK);
    aps_model_param_counts(m, pc);
}

/* Mixtral-8x7B: L=32, h=4096, a=32, kv=8, d=128, f=14336, E=8, top-2,
 * V=32000.  Attention q,o 2*4096*4096 + k,v 2*4096*1024 = 41,943,040;
 * + 2 RMSNorm 8,192 + router 4096*8 = 32,768 + experts 8*3*4096*14336 =
 * 1,409,286,144 -> 1,451,270,144 per layer (top-2: 352,321,536 of experts,
 * 394,305,536 per layer); x32 + embed, lm_head 2*32000*4096 = 262,144,000
 * + norm 4,096 -> total 46,702,792,704, active 12,879,925,248. */
static void test_moe_params_mixtral_8x7b(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    moe_model(&m, "mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000);
    m.num_experts = 8;
    m.experts_per_token = 2;
    m.moe_ffn_hidden_size = 14336;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.moe_layers, 32.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 1451270144.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer_active, 394305536.0);
    ASSERT_DBL_EXACT(pc.total, 46702792704.0);
    ASSERT_DBL_EXACT(pc.active, 12879925248.0);
    ASSERT_DBL_EXACT(pc.mtp, 0.0);
    assert_true(aps_model_is_moe(&m));
}

/* Qwen3-30B-A3B: L=48, h=2048, a=32, kv=4, d=128, f=768, E=128, top-8,
 * V=151936.  Attention 2*2048*4096 + 2*2048*512 + q_norm,k_norm 2*128 =
 * 18,874,624; + 4,096 norms + router 262,144 + 128*3*2048*768 =
 * 603,979,776 -> 623,120,640 per layer (top-8 experts 37,748,736:
 * 56,889,600); x48 + 2*151936*2048 = 622,329,856 + 2,048 ->
 * total 30,532,122,624, active 3,353,032,704. */
static void test_moe_params_qwen3_30b_a3b(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    moe_model(&m, "qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936);
    m.head_dim = 128;
    m.qk_norm = true;
    m.num_experts = 128;
    m.experts_per_token = 8;
    m.moe_ffn_hidden_size = 768;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 623120640.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer_active, 56889600.0);
    ASSERT_DBL_EXACT(pc.total, 30532122624.0);
    ASSERT_DBL_EXACT(pc.active, 3353032704.0);
}

/* aps_model_moe_layers_in, the closed form, against aps_model_is_moe_layer
 * summed layer by layer over every range [lo, hi) of a 23-layer model
 * plus two MTP layers (indices 23, 24), for leading dense layers,
 * moe_layer_freq / moe_layer_phase and a moe_dense_layers list; and a
 * hand count: freq 3, phase 1, 2 leading dense, dense list {4, 10}:
 * MoE layers 7, 13, 16, 19, 22 (1 < 2 is leading dense; 4, 10 listed). */
static void test_moe_layers_in_closed_form(void **state)
{
    (void)state;
    static const int64_t freq[] = {1, 2, 3, 4};
    aps_model m;
    moe_model(&m, "range", 23, 256, 4, 4, 512, 1000);
    m.num_experts = 8;
    m.experts_per_token = 2;
    m.moe_ffn_hidden_size = 128;
    for (size_t f = 0; f < sizeof freq / sizeof freq[0]; f++)
        for (int64_t phase = 0; phase < freq[f]; phase++)
            for (int64_t first = 0; first < 3; first++)
                for (int64_t list = 0; list < 2; list++) {
                    m.moe_layer_freq = freq[f];
                    m.moe_layer_phase = phase;
                    m.moe_first_dense_layers = first;
                    m.moe_dense_layer_count = list ? 2 : 0;
                    m.moe_dense_layers[0] = 4;
                    m.moe_dense_layers[1] = 10;
                    for (int64_t lo = -1; lo <= 25; lo++)
                        for (int64_t hi = lo; hi <= 25; hi++) {
                            int64_t want = 0;
                            for (int64_t i = lo < 0 ? 0 : lo; i < hi; i++)
                                want += aps_model_is_moe_layer(&m, i);
                            assert_int_equal(aps_model_moe_layers_in(&m, lo, hi), want);
                        }
                }
    m.moe_layer_freq = 3;
    m.moe_layer_phase = 1;
    m.moe_first_dense_layers = 2;
    m.moe_dense_layer_count = 2;
    assert_int_equal(aps_model_moe_layers_in(&m, 0, 23), 5);
    assert_int_equal(aps_model_moe_layers_in(&m, 8, 17), 2);
    /* layer 22 (the last) is MoE: each MTP layer past it is too */
    assert_int_equal(aps_model_moe_layers_in(&m, 20, 25), 3);
    m.num_experts = 0;
    assert_int_equal(aps_model_moe_layers_in(&m, 0, 23), 0);
}

/* Qwen1.5-MoE-A2.7B: L=24, h=2048, a=kv=16, d=128, f=1408, fs=5632, E=60,
 * top-4, V=151936.  Attention 4*2048*2048 + qkv bias 48*128 = 16,783,360;
 * shared expert 3*2048*5632 + its gate 2048 = 34,605,056; router 122,880;
 * experts 60*3*2048*1408 = 519,045,120 (top-4: 34,603,008); norms 4,096
 * -> 570,560,512 per layer (86,118,400 active); x24 + 622,329,856 + 2,048
 * -> total 14,315,784,192, active 2,689,173,504. */
static void test_moe_params_qwen15_moe_shared_expert(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    moe_model(&m, "qwen1.5-moe-a2.7b", 24, 2048, 16, 16, 5632, 151936);
    m.qkv_bias = true;
    m.num_experts = 60;
    m.experts_per_token = 4;
    m.moe_ffn_hidden_size = 1408;
    m.shared_expert_ffn_hidden_size = 5632;
    m.shared_expert_gate = true;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 570560512.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer_active, 86118400.0);
    ASSERT_DBL_EXACT(pc.total, 14315784192.0);
    ASSERT_DBL_EXACT(pc.active, 2689173504.0);

    /* decoder_sparse_step 2 (layers 1, 3, ...) and mlp_only_layers {1}:
     * 11 MoE layers, 13 dense ones of 3 h f = 3*2048*5632 */
    m.moe_layer_freq = 2;
    m.moe_layer_phase = 1;
    m.moe_dense_layer_count = 1;
    m.moe_dense_layers[0] = 1;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.moe_layers, 11.0);
    assert_false(aps_model_is_moe_layer(&m, 0));
    assert_false(aps_model_is_moe_layer(&m, 1));
    assert_true(aps_model_is_moe_layer(&m, 3));
    ASSERT_DBL_EXACT(pc.per_layer, 16783360.0 + 4096.0 + 3.0 * 2048 * 5632);
    ASSERT_DBL_EXACT(pc.layers, 11.0 * 570560512.0 +
                                    13.0 * (16783360.0 + 4096.0 + 34603008.0));
}

/* DeepSeek-V3: MLA attention q_a 7168*1536 + q_a_norm 1536 + q_b
 * 1536*128*192 + kv_a 7168*576 + kv_a_norm 512 + kv_b 512*128*256 + o
 * 128*128*7168 = 187,107,328; dense layer + 2 norms 14,336 + 3*7168*18432
 * = 583,483,392; MoE layer + router 7168*256 + e_score_correction_bias 256
 * + shared 3*7168*2048 + 256 experts of 3*7168*2048 = 11,507,286,272
 * (top-8: 585,318,656); 3 dense + 58 MoE + embed, lm_head 2*129280*7168 +
 * 7168 -> total 671,026,419,200, active 37,552,297,472.  MTP: one MoE
 * layer + enorm, hnorm, shared_head.norm 3*7168 + eh_proj 2*7168^2 + own
 * embed and head 2*129280*7168 = 13,463,426,304 (active 688,100,608). */
static void test_moe_params_deepseek_v3_mla_mtp(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    moe_model(&m, "deepseek-v3", 61, 7168, 128, 128, 18432, 129280);
    m.head_dim = 192;
    m.q_lora_rank = 1536;
    m.kv_lora_rank = 512;
    m.qk_nope_head_dim = 128;
    m.qk_rope_head_dim = 64;
    m.v_head_dim = 128;
    m.num_experts = 256;
    m.experts_per_token = 8;
    m.moe_ffn_hidden_size = 2048;
    m.shared_expert_ffn_hidden_size = 2048;
    m.moe_router_bias = true;
    m.moe_first_dense_layers = 3;
    m.mtp_layers = 1;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.moe_layers, 58.0);
    ASSERT_DBL_EXACT(pc.per_layer, 583483392.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 11507286272.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer_active, 585318656.0);
    ASSERT_DBL_EXACT(pc.total, 671026419200.0);
    ASSERT_DBL_EXACT(pc.active, 37552297472.0);
    ASSERT_DBL_EXACT(pc.mtp, 13463426304.0);
    ASSERT_DBL_EXACT(pc.mtp_active, 688100608.0);
    ASSERT_DBL_EXACT(pc.total + pc.mtp, 684489845504.0);
}

/* DeepSeek-V3.2: DeepSeek-V3 above plus a lightning indexer per layer
 * (Megatron-LM d98e8a64 dsa.py DSAIndexer; transformers DeepseekV32Indexer):
 * wq_b 1536*64*128 = 12,582,912, wk 7168*128 = 917,504, weights_proj
 * 7168*64 = 458,752, k_norm LayerNorm weight + bias 2*128 = 256 ->
 * 13,959,424 per layer; dense layer 597,442,816; total 671,026,419,200 +
 * 61 x 13,959,424 = 671,877,944,064; MTP 13,477,385,728 (its layer has an
 * indexer too): with it 685,355,329,792, the card's 685B. */
static void dsv32_model(aps_model *m)
{
    moe_model(m, "deepseek-v3.2", 61, 7168, 128, 128, 18432, 129280);
    m->head_dim = 192;
    m->q_lora_rank = 1536;
    m->kv_lora_rank = 512;
    m->qk_nope_head_dim = 128;
    m->qk_rope_head_dim = 64;
    m->v_head_dim = 128;
    m->num_experts = 256;
    m->experts_per_token = 8;
    m->moe_ffn_hidden_size = 2048;
    m->shared_expert_ffn_hidden_size = 2048;
    m->moe_router_bias = true;
    m->moe_first_dense_layers = 3;
    m->mtp_layers = 1;
    m->index_n_heads = 64;
    m->index_head_dim = 128;
    m->index_topk = 2048;
}

static void test_dsa_params_deepseek_v32(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    dsv32_model(&m);
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(aps_dsa_indexer_params(&m), 13959424.0);
    ASSERT_DBL_EXACT(pc.per_layer, 597442816.0);
    ASSERT_DBL_EXACT(pc.total, 671877944064.0);
    ASSERT_DBL_EXACT(pc.mtp, 13477385728.0);
    ASSERT_DBL_EXACT(pc.total + pc.mtp, 685355329792.0);
}

/* Keys per query under DSA, top-k 2048: S = 32768 > k: query i attends
 * min(i + 1, k), on average k - k^2 / (2 S) = 2048 - 64 = 1984 (dense
 * causal: 16384); S = 1024 <= k: causal 512; without causal skipping
 * min(k, S) = 2048.  Indexer forward at S = 32768: projections 2 S x
 * 13,959,168 = 914,828,034,048, scores 2 S (S / 2) 64 x 128 =
 * 8,796,093,022,208 -> 9,710,921,056,256. */
static void test_dsa_keys_and_indexer_flops(void **state)
{
    (void)state;
    aps_model m;
    dsv32_model(&m);
    ASSERT_DBL_EXACT(aps_attention_keys(&m, 32768.0, true), 1984.0);
    ASSERT_DBL_EXACT(aps_attention_keys(&m, 1024.0, true), 512.0);
    ASSERT_DBL_EXACT(aps_attention_keys(&m, 32768.0, false), 2048.0);
    ASSERT_DBL_EXACT(aps_dsa_indexer_flops(&m, 32768.0), 9710921056256.0);
    /* trained (training.dsa_indexer_loss_coeff > 0): per token and top-k
     * key the target 2 x 128 x (512 + 64) = 147,456 and the scores'
     * backward 4 x 64 x 128 = 32,768, S x 1984 = 65,011,712 pairs ->
     * 11,716,670,783,488, plus the projections' weight gradients
     * 914,828,034,048 -> 12,631,498,817,536 */
    aps_training t = {0};
    ASSERT_DBL_EXACT(aps_dsa_indexer_train_flops(&m, &t, 32768.0), 0.0);
    t.dsa_indexer_loss_coeff = 0.001;
    ASSERT_DBL_EXACT(aps_dsa_indexer_train_flops(&m, &t, 32768.0), 12631498817536.0);
    m.index_n_heads = m.index_head_dim = m.index_topk = 0;
    ASSERT_DBL_EXACT(aps_attention_keys(&m, 32768.0, true), 16384.0);
    ASSERT_DBL_EXACT(aps_dsa_indexer_flops(&m, 32768.0), 0.0);
}

/* One DeepSeek-V3.2 layer's cost on one H100, b = 1, S = T = 4096, tp =
 * cp = 1, against the same layer without the indexer: parameters +
 * 13,959,424 (whole on the rank); saved + 4 T k = 33,554,432 (int32
 * top-k) + 2 T a ((kr + dr) + dn + kr - (2 (dn + dr) + dv)) = 2 x 4096 x
 * 128 x 704 = 738,197,504 -> 771,751,936 bytes.  Untrained the indexer has
 * no backward; trained it saves 2 (T Hi Di + S Di + T Hi) + 4 T k =
 * 102,236,160 bytes more and its forward adds the target, T keys 2 a
 * (kr + dr) = 4096 x 1536 x 147,456 FLOPs at the attention rate. */
static void test_dsa_layer_cost(void **state)
{
    (void)state;
    aps_model m, dense;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    dsv32_model(&m);
    dense = m;
    dense.index_n_heads = dense.index_head_dim = dense.index_topk = 0;
    fx_h100(&c, 8);
    fx_training(&t, 8, 4096);
    aps_strategy_defaults(&s);
    aps_moe_cost dc, nc, tc;
    aps_moe_layer_cost(&m, &c, &t, &s, &dc);
    aps_moe_layer_cost(&dense, &c, &t, &s, &nc);
    ASSERT_DBL_EXACT(dc.mla_params - nc.mla_params, 13959424.0);
    ASSERT_REL(dc.mla_act - nc.mla_act, 771751936.0, 1e-12);
    assert_true(dc.dsa_indexer_fwd > 0.0);
    ASSERT_DBL_EXACT(dc.dsa_indexer_bwd, 0.0);
    t.dsa_indexer_loss_coeff = 0.001;
    aps_moe_layer_cost(&m, &c, &t, &s, &tc);
    ASSERT_REL(tc.mla_act - dc.mla_act, 102236160.0, 1e-12);
    double rate = c.device.peak_flops_bf16 * c.device.attention_efficiency;
    ASSERT_REL(tc.dsa_indexer_fwd - dc.dsa_indexer_fwd,
               4096.0 * 1536.0 * 147456.0 / rate, 1e-9);
    assert_true(tc.dsa_indexer_bwd > 0.0);
    /* a sequence shorter than the top-k keeps S indices per query
     * (dsa.py topk_k = min(index_topk, sk)): at S = 1024, 4 T S =
     * 4,194,304 bytes, plus 2 x 1024 x 128 x 704 = 184,549,376 */
    t.dsa_indexer_loss_coeff = 0.0;
    t.seq_length = 1024;
    aps_moe_layer_cost(&m, &c, &t, &s, &dc);
    aps_moe_layer_cost(&dense, &c, &t, &s, &nc);
    ASSERT_REL(dc.mla_act - nc.mla_act, 4194304.0 + 184549376.0, 1e-12);
}

static void test_dsa_validate_names_the_field(void **state)
{
    (void)state;
    aps_model m;
    dsv32_model(&m);
    m.index_n_heads = 0;
    expect_einval(&m, "model.index_head_dim: 128 given without index_n_heads");
    m.index_head_dim = m.index_topk = 0;
    m.index_rope_interleave = true;
    expect_einval(&m, "model.index_rope_interleave: given without index_n_heads");
    dsv32_model(&m);
    m.index_topk = 0;
    expect_einval(&m, "model.index_topk: must be in [1, 16777216] with DeepSeek Sparse Attention (got 0)");
    dsv32_model(&m);
    m.index_head_dim = 32;
    expect_einval(&m, "model.index_head_dim: 32 is narrower than qk_rope_head_dim 64");
    fx_llama31_8b(&m);
    m.index_n_heads = 4;
    m.index_head_dim = 64;
    m.index_topk = 128;
    expect_einval(&m, "model.index_n_heads: 4 given without multi-head latent attention");
}

/* Cross-layer top-k sharing (GLM-5.2's IndexShare) on DeepSeek-V3.2's
 * shapes, index_topk_freq 4 after index_skip_topk_offset 3 (Megatron-LM
 * d98e8a64 dsa.py is_dsa_skip_topk_layer, 1-based n: max(n - 3, 0) % 4 ==
 * 0 computes): 0-based layers 0, 1, 2, then 6, 10, ..., 58 -> 3 + 14 = 17
 * of 61 build an indexer.  Total 671,026,419,200 + 17 x 13,959,424 =
 * 671,263,729,408; the MTP layer keeps its own indexer (13,477,385,728 as
 * without sharing); the indexer's FLOPs are 17 / 61 of every layer's.
 * Offset 0 is Megatron's offset 1 (its unit test test_attention_variant_
 * dsa.py: layer 1 computes, 2-4 reuse layer 1's, 5 computes). */
static void test_dsa_topk_sharing(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    dsv32_model(&m);
    double every = aps_dsa_indexer_flops(&m, 32768.0);
    m.index_topk_freq = 4;
    m.index_skip_topk_offset = 3;
    bool want[8] = {true, true, true, false, false, false, true, false};
    for (int64_t i = 0; i < 8; i++)
        assert_int_equal(aps_dsa_layer_computes_topk(&m, i), want[i]);
    assert_int_equal(aps_dsa_indexer_layers(&m), 17);
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, 671263729408.0);
    ASSERT_DBL_EXACT(pc.mtp, 13477385728.0);
    ASSERT_REL(aps_dsa_indexer_flops(&m, 32768.0), every * 17.0 / 61.0, 1e-12);
    /* a model chunk must start on a computing layer */
    char msg[APS_REASON_LEN];
    int64_t ok[3] = {2, 4, 55}, bad[2] = {3, 58}, empty_first[3] = {0, 6, 55};
    assert_int_equal(aps_dsa_chunks_check(&m, ok, 3, msg, sizeof msg), APS_REASON_NONE);
    assert_int_equal(aps_dsa_chunks_check(&m, empty_first, 3, msg, sizeof msg),
                     APS_REASON_NONE);
    assert_int_equal(aps_dsa_chunks_check(&m, bad, 2, msg, sizeof msg),
                     APS_REASON_PP_PARTITION);
    assert_string_equal(msg, "model chunk 2 starts on layer 4 (1-based), "
                             "which reuses layer 3's top-k (index_topk_freq "
                             "4, offset 3): Megatron-Core refuses it "
                             "(_validate_dsa_index_share_pipeline_split); "
                             "start it on layer 3 or 7");
    m.index_skip_topk_offset = 0;
    assert_true(aps_dsa_layer_computes_topk(&m, 0));
    assert_false(aps_dsa_layer_computes_topk(&m, 1));
    assert_false(aps_dsa_layer_computes_topk(&m, 3));
    assert_true(aps_dsa_layer_computes_topk(&m, 4));
    /* the mean layer's cost: the indexer's parameters, forward and saved
     * top-k indices (4 T k = 33,554,432 bytes at T = 4096) at 17 / 61 */
    m.index_skip_topk_offset = 3;
    {
        aps_model all = m;
        all.index_topk_freq = 1;
        aps_cluster c;
        aps_training t;
        aps_strategy s;
        fx_h100(&c, 8);
        fx_training(&t, 8, 4096);
        aps_strategy_defaults(&s);
        aps_moe_cost sc, ac;
        aps_moe_layer_cost(&m, &c, &t, &s, &sc);
        aps_moe_layer_cost(&all, &c, &t, &s, &ac);
        ASSERT_REL(ac.mla_params - sc.mla_params, 13959424.0 * 44.0 / 61.0, 1e-12);
        ASSERT_REL(ac.mla_act - sc.mla_act, 33554432.0 * 44.0 / 61.0, 1e-12);
        ASSERT_REL(sc.dsa_indexer_fwd, ac.dsa_indexer_fwd * 17.0 / 61.0, 1e-12);
    }
    /* without sharing every layer computes and any split stands */
    m.index_topk_freq = 1;
    assert_int_equal(aps_dsa_indexer_layers(&m), 61);
    assert_int_equal(aps_dsa_chunks_check(&m, bad, 2, msg, sizeof msg), APS_REASON_NONE);
    m.index_topk_freq = 4;
    m.index_n_heads = m.index_head_dim = m.index_topk = 0;
    expect_einval(&m, "model.index_topk_freq: 4 given without index_n_heads");
}

/* MiniMax-M3's block-sparse attention (NeMo AutoModel 00affc66
 * minimax_m3_vl/layers.py) on its shapes: 60 layers, 57 sparse, index
 * heads 4 x 128, blocks of 128, the top 16.  Keys per query at S = 4096
 * (AutoModel's selected pairs, continuous): 2048^2 / 2 + 2048 x 15 x 128
 * + 16 x 128^2 / 2 = 6,160,384 pairs, 1504 keys; at S = 1024 (within the
 * 2048 budget) the causal 512; without causal skipping min(2048, S); the
 * model's mean (57 x 1504 + 3 x 2048) / 60 = 1531.2.  One indexer:
 * 6144 x 512 + 6144 x 128 + 2 x 128 = 3,932,416, the mean layer 57 / 60
 * of it; forward FLOPs per sequence and sparse layer 2 S 3,932,160 +
 * 2 S (S / 2) 512. */
static void msa_model(aps_model *m)
{
    moe_model(m, "minimax-m3", 60, 6144, 64, 4, 12288, 200064);
    m->head_dim = 128;
    m->num_experts = 128;
    m->experts_per_token = 4;
    m->moe_ffn_hidden_size = 3072;
    m->moe_first_dense_layers = 3;
    m->msa_layers = 57;
    m->msa_index_heads = 4;
    m->msa_index_dim = 128;
    m->msa_block_size = 128;
    m->msa_topk_blocks = 16;
    m->msa_local_blocks = 1;
}

static void test_msa_keys_params_and_validate(void **state)
{
    (void)state;
    aps_model m;
    msa_model(&m);
    char err[256] = "";
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    ASSERT_DBL_EXACT(aps_msa_keys(&m, 4096.0, true), 1504.0);
    ASSERT_DBL_EXACT(aps_msa_keys(&m, 1024.0, true), 512.0);
    ASSERT_DBL_EXACT(aps_msa_keys(&m, 4096.0, false), 2048.0);
    ASSERT_REL(aps_attention_keys(&m, 4096.0, true), 1531.2, 1e-12);
    ASSERT_DBL_EXACT(aps_msa_indexer_params_sum(&m), 57.0 * 3932416.0);
    ASSERT_REL(aps_msa_indexer_params(&m), 57.0 / 60.0 * 3932416.0, 1e-12);
    ASSERT_REL(aps_msa_indexer_flops(&m, 4096.0),
               57.0 / 60.0 * (2.0 * 4096.0 * 3932160.0 +
                              2.0 * 4096.0 * 2048.0 * 512.0), 1e-12);
    /* the mean layer's cost on one H100, b = 1, S = T = 4096: the
     * indexer's weights, its saved block selection (4 bytes x Hi 4 x K 16
     * a token: select_blocks' int32 [4, tokens, 16]) and its forward (the
     * two projections' GEMMs and the scores 2 T (S / 2) Hi Di at the
     * attention rate), each at 57 / 60 */
    {
        aps_model dense = m;
        dense.msa_layers = dense.msa_index_heads = dense.msa_index_dim = 0;
        dense.msa_block_size = dense.msa_topk_blocks = dense.msa_local_blocks = 0;
        aps_cluster c;
        aps_training t;
        aps_strategy s;
        fx_h100(&c, 8);
        fx_training(&t, 8, 4096);
        aps_strategy_defaults(&s);
        aps_moe_cost sc, dc;
        aps_moe_layer_cost(&m, &c, &t, &s, &sc);
        aps_moe_layer_cost(&dense, &c, &t, &s, &dc);
        const double f = 57.0 / 60.0, T = 4096.0;
        ASSERT_REL(sc.mla_params - dc.mla_params, f * 3932416.0, 1e-12);
        ASSERT_REL(sc.mla_act - dc.mla_act, f * 4.0 * T * 4.0 * 16.0, 1e-12);
        double rate = c.device.peak_flops_bf16 * c.device.attention_efficiency;
        double fwd = aps_gemm_time(&c.device, t.precision, T, 512.0, 6144.0) +
                     aps_gemm_time(&c.device, t.precision, T, 128.0, 6144.0) +
                     2.0 * T * 2048.0 * 512.0 / rate;
        ASSERT_REL(sc.dsa_indexer_fwd, f * fwd, 1e-12);
        ASSERT_DBL_EXACT(sc.dsa_indexer_bwd, 0.0);
    }
    m.msa_topk_blocks = 0;
    expect_einval(&m, "model.msa_topk_blocks: must be in [1, 16777216]");
    msa_model(&m);
    m.msa_init_blocks = 16;
    expect_einval(&m, "model.msa_init_blocks: 16 forced blocks and the local one");
    msa_model(&m);
    m.msa_layers = 0;
    expect_einval(&m, "model.msa_index_heads: 4 given without msa_layers");
    msa_model(&m);
    m.num_experts = 0;
    m.experts_per_token = 0;
    m.moe_ffn_hidden_size = 0;
    m.moe_first_dense_layers = 0;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_ENOTIMPL);
    ASSERT_HAS(err, "model.msa_layers: block-sparse attention is priced on "
                    "GQA mixture-of-experts models (MiniMax-M3) only: it "
                    "needs num_experts");
    msa_model(&m);
    m.msa_index_heads = 3;
    expect_einval(&m, "model.msa_index_heads: 3 does not divide "
                      "num_attention_heads 64");
    msa_model(&m);
    m.msa_local_blocks = 0; /* not given: the own block, 1 */
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
}

/* DeepSeek-V2-Lite: no query compression, q_proj 2048*16*192; kv_a
 * 2048*576 + 512 + kv_b 512*16*256 + o 16*128*2048 -> 13,763,072; dense
 * layer 81,007,104; MoE layer with 2 shared experts 2*3*2048*1408 and 64
 * routed 584,847,872 (top-6: 83,104,256); 1 dense + 26 MoE + 2*102400*2048
 * + 2048 -> total 15,706,484,224, active 2,661,150,208. */
static void test_moe_params_deepseek_v2_lite(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    moe_model(&m, "deepseek-v2-lite", 27, 2048, 16, 16, 10944, 102400);
    m.head_dim = 192;
    m.kv_lora_rank = 512;
    m.qk_nope_head_dim = 128;
    m.qk_rope_head_dim = 64;
    m.v_head_dim = 128;
    m.num_experts = 64;
    m.experts_per_token = 6;
    m.moe_ffn_hidden_size = 1408;
    m.shared_expert_ffn_hidden_size = 2 * 1408;
    m.moe_first_dense_layers = 1;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_layer, 81007104.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 584847872.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer_active, 83104256.0);
    ASSERT_DBL_EXACT(pc.total, 15706484224.0);
    ASSERT_DBL_EXACT(pc.active, 2661150208.0);
}

/* A dense model: active = total, no MoE terms. */
static void test_moe_params_dense_active_is_total(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    fx_llama31_8b(&m);
    aps_model_param_counts(&m, &pc);
    ASSERT_DBL_EXACT(pc.active, pc.total);
    ASSERT_DBL_EXACT(pc.moe_layers, 0.0);
    ASSERT_DBL_EXACT(pc.mtp, 0.0);
    assert_false(aps_model_is_moe(&m));
}

static void test_moe_validate_names_the_field(void **state)
{
    (void)state;
    aps_model m;
    char err[APS_REASON_LEN];
    fx_llama31_8b(&m);
    m.experts_per_token = 2;
    expect_einval(&m, "experts_per_token: given without num_experts");
    fx_llama31_8b(&m);
    m.v_head_dim = 128;
    expect_einval(&m, "v_head_dim: 128 given without kv_lora_rank");
    moe_model(&m, "moe", 4, 256, 4, 4, 512, 1000);
    m.num_experts = 8;
    m.moe_ffn_hidden_size = 128;
    m.experts_per_token = 9;
    expect_einval(&m, "experts_per_token: 9 exceeds num_experts = 8");
    m.experts_per_token = 2;
    m.moe_first_dense_layers = 4;
    expect_einval(&m, "moe_first_dense_layers");
    m.moe_first_dense_layers = 0;
    m.moe_layer_freq = 2;
    m.moe_layer_phase = 2;
    expect_einval(&m, "moe_layer_phase");
    m.moe_layer_phase = 1;
    m.moe_dense_layer_count = 2;
    m.moe_dense_layers[0] = 3;
    m.moe_dense_layers[1] = 1;
    expect_einval(&m, "moe_dense_layers[2]");
    m.moe_dense_layers[0] = 1;
    m.moe_dense_layers[1] = 3;
    expect_einval(&m, "no layer has them");
    m.moe_dense_layer_count = 0;
    m.shared_expert_gate = true;
    expect_einval(&m, "shared_expert_gate");
    m.shared_expert_gate = false;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
}

/* gpt-oss-20b (transformers modeling_gpt_oss.py): L=24, h=2880, a=64,
 * kv=8, d=64, f=f_e=2880, E=32, top-4, V=201088, untied.  Attention
 * q,o 2*2880*4096 + k,v 2*2880*512 = 26,542,080 + q,k,v,o biases
 * 4096+512+512+2880 = 8,000 + sinks 64 -> 26,550,144; norms 5,760; router
 * 32*2880 + bias 32 = 92,192; one expert 3*2880*2880 + biases 2*2880 +
 * 2880 = 24,891,840 (x32: 796,538,880; x4: 99,567,360) -> 823,186,976
 * per layer (126,215,456 active); x24 + embed, lm_head 2*579,133,440 +
 * norm 2,880 -> total 20,914,757,184, active 4,187,440,704 (OpenAI's
 * 3.61B leaves out the input embedding: 4,187,440,704 - 579,133,440 =
 * 3,608,307,264). */
static void test_moe_params_gpt_oss_20b(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    moe_model(&m, "gpt-oss-20b", 24, 2880, 64, 8, 2880, 201088);
    m.head_dim = 64;
    m.qkv_bias = m.attn_out_bias = m.mlp_bias = true;
    m.attention_sinks = true;
    m.moe_router_linear_bias = true;
    m.num_experts = 32;
    m.experts_per_token = 4;
    m.moe_ffn_hidden_size = 2880;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 823186976.0);
    ASSERT_DBL_EXACT(pc.per_moe_layer_active, 126215456.0);
    ASSERT_DBL_EXACT(pc.total, 20914757184.0);
    ASSERT_DBL_EXACT(pc.active, 4187440704.0);
}

/* OLMoE-1B-7B-0924 (transformers OlmoeAttention): q_norm over the whole
 * Q projection (h = a*d = 2048 weights), k_norm over the whole K (kv*d =
 * 2048): 4,096 per layer where Qwen3's per-head norms have 2*d = 256.
 * L=16, h=2048, a=kv=16, f_e=1024, E=64, top-8, V=50304: attention
 * 16,777,216 + Q/K norms 4,096 + norms 4,096 + router 131,072 + experts
 * 64*6,291,456 = 402,653,184 -> 419,569,664 per layer (67,248,128
 * active); x16 + 2*103,022,592 + 2,048 -> 6,919,161,856 total,
 * 1,282,017,280 active. */
/* OLMoE-1B-7B with its full-width Q/K norms. */
static void olmoe_1b_7b(aps_model *m)
{
    moe_model(m, "olmoe-1b-7b-0924", 16, 2048, 16, 16, 1024, 50304);
    m->qk_norm = m->qk_norm_full_width = true;
    m->num_experts = 64;
    m->experts_per_token = 8;
    m->moe_ffn_hidden_size = 1024;
}

static void test_moe_params_olmoe_full_width_qk_norm(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    olmoe_1b_7b(&m);
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.per_moe_layer, 419569664.0);
    ASSERT_DBL_EXACT(pc.total, 6919161856.0);
    ASSERT_DBL_EXACT(pc.active, 1282017280.0);
}

/* Per-head Q/K norms with a weight each (Command R+) count as many
 * weights as full-width ones, (a + k) d per layer, split with the heads;
 * given with full width, or without qk_norm, they are refused. */
static void test_model_qk_norm_head_weights(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    olmoe_1b_7b(&m);
    counts_of(&m, &pc);
    double full = pc.total;
    m.qk_norm_full_width = false;
    m.qk_norm_head_weights = true;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, full);
    /* on 4 tensor-parallel ranks: (16 + 16) x 128 / 4 = 1024 norm weights
     * a rank, where shared per-head norms keep 2 x 128 = 256 whole */
    double split = aps_layer_params_tp(&m, 4);
    m.qk_norm_head_weights = false;
    ASSERT_DBL_EXACT(split - aps_layer_params_tp(&m, 4), 1024.0 - 256.0);
    m.qk_norm_head_weights = true;
    m.qk_norm_full_width = true;
    expect_einval(&m, "model.qk_norm_head_weights: given with qk_norm_full_width");
    m.qk_norm_full_width = m.qk_norm = false;
    expect_einval(&m, "model.qk_norm_head_weights: given without qk_norm");
}

/* Apertus-8B (transformers modular_apertus.py @ 008e5743): per layer q, o
 * 2*4096*4096 + k, v 2*4096*1024 + q_norm, k_norm 2*128 + up, down
 * 2*4096*21504 + xIELU's alpha_p, alpha_n 2 + two norms 2*4096 =
 * 218,112,258; x32 + untied embedding and lm_head 2*131072*4096 + the final
 * norm 4096 = 8,053,338,176 (the count transformers loads).  On 4 TP ranks
 * the matrices split and the two scalars stay whole on every rank; with
 * experts the scalars would be per expert, which is refused. */
static void test_model_xielu_apertus_8b(void **state)
{
    (void)state;
    aps_model m;
    aps_param_counts pc;
    moe_model(&m, "apertus-8b", 32, 4096, 32, 8, 21504, 131072);
    m.mlp = APS_MLP_XIELU;
    m.qk_norm = true;
    m.tie_word_embeddings = false;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, 8053338176.0);
    double xielu_tp4 = aps_layer_params_tp(&m, 4);
    m.mlp = APS_MLP_GELU;
    counts_of(&m, &pc);
    ASSERT_DBL_EXACT(pc.total, 8053338176.0 - 32.0 * APS_XIELU_PARAMS);
    ASSERT_DBL_EXACT(xielu_tp4 - aps_layer_params_tp(&m, 4), 2.0);
    m.mlp = APS_MLP_XIELU;
    m.num_experts = 8;
    m.experts_per_token = 2;
    m.moe_ffn_hidden_size = 1024;
    expect_einval(&m, "model.mlp: \"xielu\" is modelled for dense MLPs only");
}

/* The new fields are refused where they mean nothing: full-width Q/K
 * norms without Q/K norms, a router logit bias without experts, sinks
 * with multi-head latent attention (not in its count). */
static void test_model_new_attention_fields_refused(void **state)
{
    (void)state;
    aps_model m;
    char err[APS_REASON_LEN];
    fx_llama31_8b(&m);
    m.qk_norm_full_width = true;
    expect_einval(&m, "model.qk_norm_full_width: given without qk_norm");
    fx_llama31_8b(&m);
    m.moe_router_linear_bias = true;
    expect_einval(&m, "model.moe_router_linear_bias: given without num_experts");
    moe_model(&m, "mla", 4, 1024, 8, 8, 2048, 1000);
    m.kv_lora_rank = 64;
    m.qk_nope_head_dim = m.qk_rope_head_dim = m.v_head_dim = 32;
    m.head_dim = 64;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    m.attention_sinks = true;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_ENOTIMPL);
    ASSERT_HAS(err, "model.attention_sinks: not modelled with multi-head latent");
}

/* Router settings: checked, never estimated (validate_router).  A dense
 * model takes none; a NaN, an infinity or a negative number is refused by
 * name; the groups must divide the experts (Megatron TransformerConfig
 * @ d98e8a64: num_moe_experts % moe_router_num_groups == 0, group_topk <=
 * num_groups) and the chosen groups hold top-k experts (DeepSeek MoEGate
 * takes top_k of them).  The DeepSeek-V3 settings (n_group 8, topk_group
 * 4 of 256 experts, top-8: 4 x 32 = 128 >= 8; sum of top 2 per group;
 * routed_scaling_factor 2.5) pass and leave the counts unchanged. */
static void test_moe_router_settings(void **state)
{
    (void)state;
    aps_model m;
    char err[APS_REASON_LEN];
    fx_llama31_8b(&m);
    m.moe_aux_loss_coeff = 0.01;
    expect_einval(&m, "model.moe_aux_loss_coeff: given without num_experts");
    fx_llama31_8b(&m);
    m.moe_router_pre_softmax = true;
    expect_einval(&m, "model.moe_router_pre_softmax: given without num_experts");
    fx_llama31_8b(&m);
    m.moe_router_num_groups = 8;
    expect_einval(&m, "model.moe_router_num_groups: given without num_experts");

    moe_model(&m, "moe", 4, 256, 4, 4, 512, 1000);
    m.num_experts = 256;
    m.experts_per_token = 8;
    m.moe_ffn_hidden_size = 128;
    aps_param_counts before, after;
    counts_of(&m, &before);
    double bad[] = {-0.001, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m.moe_aux_loss_coeff = bad[i];
        expect_einval(&m, "model.moe_aux_loss_coeff: must be 0 (not given) "
                          "or finite and > 0");
        m.moe_aux_loss_coeff = 0;
        m.moe_router_topk_scaling_factor = bad[i];
        expect_einval(&m, "model.moe_router_topk_scaling_factor: must be 0");
        m.moe_router_topk_scaling_factor = 0;
    }
    m.moe_seq_aux_loss = true;
    expect_einval(&m, "model.moe_seq_aux_loss: given without "
                      "moe_aux_loss_coeff");
    m.moe_aux_loss_coeff = 0.001;
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    m.moe_router_group_topk = 4;
    expect_einval(&m, "model.moe_router_group_topk: 4 given without "
                      "moe_router_num_groups");
    m.moe_router_num_groups = 7;
    expect_einval(&m, "model.moe_router_num_groups: must divide num_experts "
                      "= 256 (got 7)");
    m.moe_router_num_groups = 8;
    m.moe_router_group_topk = 9;
    expect_einval(&m, "model.moe_router_group_topk: must be in [1, "
                      "moe_router_num_groups = 8] (got 9)");
    m.moe_router_group_topk = 0;
    expect_einval(&m, "(got 0)");
    /* 64 groups of 4 experts: one group holds 4 < top-8 */
    m.moe_router_num_groups = 64;
    m.moe_router_group_topk = 1;
    expect_einval(&m, "model.moe_router_group_topk: 1 groups of 4 experts "
                      "hold fewer than experts_per_token = 8");
    m.moe_router_num_groups = 8;
    m.moe_router_group_topk = 4;
    m.moe_router_group_score_topk = 33;
    expect_einval(&m, "model.moe_router_group_score_topk: must be 0 (not "
                      "given) or in [1, num_experts / moe_router_num_groups "
                      "= 32] (got 33)");
    m.moe_router_group_score_topk = 2;
    m.moe_router_topk_scaling_factor = 2.5;
    counts_of(&m, &after);
    ASSERT_DBL_EXACT(after.total, before.total);
    ASSERT_DBL_EXACT(after.active, before.active);
}

/* A Mixtral-shaped MoE on the Llama-3.1-8B body (8 experts of 14336,
 * top-2, every layer) on 8 H100, megatron, tp 1, dp 8. */
static void moe_8b(aps_model *m, aps_cluster *c, aps_training *t,
                   aps_strategy *s)
{
    fx_setup_8b(m, c, t, s, 8, 64, 4096);
    snprintf(m->name, sizeof m->name, "moe-8b");
    m->num_experts = 8;
    m->experts_per_token = 2;
    m->moe_ffn_hidden_size = 14336;
    t->framework = APS_FW_MEGATRON;
    s->dp_degree = 8;
    s->zero_stage = 1;
}

/* Expert-parallel constraints (moe.c, megatron parallel_state.py and
 * arguments.py @ d98e8a64): experts / ep, etp x ep within the ranks of a
 * stage, etp divides the expert width, a dense model takes no ep. */
static void test_moe_constraints(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    char msg[APS_REASON_LEN];
    moe_8b(&m, &c, &t, &s);
    char err[APS_REASON_LEN];
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    s.ep_degree = 8;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    s.ep_degree = 3; /* 8 experts */
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_EP_DIVISIBILITY);
    assert_non_null(strstr(msg, "num_experts = 8 is not divisible by ep_degree = 3"));
    s.ep_degree = 8;
    s.etp_degree = 2; /* 2 x 8 > the 8 ranks of the stage */
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_EP_DIVISIBILITY);
    assert_non_null(strstr(msg, "etp_degree x ep_degree = 2 x 8"));
    s.ep_degree = 4; /* 2 x 4 = 8 */
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    s.etp_degree = 0;
    m.num_experts = 0; /* dense */
    m.experts_per_token = m.moe_ffn_hidden_size = 0;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_EP_DIVISIBILITY);
    assert_non_null(strstr(msg, "for a dense model"));
}

/* TorchTitan's expert mesh (moe.c; torchtitan/distributed/parallel_dims.py
 * @ b5bcd76c): ep divides dp_shard x cp x tp, the fsdp x cp x tp ranks, so
 * 8 DDP replicas cannot hold ep 8 (1 rank to draw from), 2 replicas of
 * fsdp 4 hold ep 4 but not ep 8; experts are never split by TP (etp 1). */
static void test_moe_torchtitan_mesh(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    char msg[APS_REASON_LEN];
    moe_8b(&m, &c, &t, &s);
    t.framework = APS_FW_FSDP2;
    s.zero_stage = 0;
    s.ep_degree = 8; /* dp 8 x fsdp 1: Megatron folds ep over the replicas */
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "fsdp2: ep_degree = 8 does not divide "
                                "fsdp_degree x cp_degree x tp_degree = 1"));
    t.framework = APS_FW_MEGATRON;
    s.zero_stage = 1;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    t.framework = APS_FW_FSDP2;
    s.zero_stage = 0;
    s.dp_degree = 2;
    s.fsdp_degree = 4; /* HSDP: 4 sharded ranks per replica */
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "= 4; TorchTitan takes expert parallelism"));
    s.ep_degree = 4;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    s.dp_degree = 1;
    s.fsdp_degree = 4;
    s.tp_degree = 2;
    s.sequence_parallel = true; /* tp 2 x fsdp 4 = 8 ranks, ep 4 */
    s.etp_degree = 1;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    s.etp_degree = 2; /* Megatron's grid fits (2 x 4 of 8), TorchTitan's not */
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "fsdp2: etp_degree = 2"));
}

/* Megatron's --use-torch-fsdp2 with expert parallelism: validate_args
 * (megatron/training/arguments.py @ d98e8a64 l.1036) asserts
 * expert_model_parallel_size == 1, so fsdp 8 with ep 8 is refused with
 * that reason; the same sharding without EP, and ep 8 over ZeRO-1, run. */
static void test_moe_megatron_fsdp2_ep(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    char msg[APS_REASON_LEN];
    moe_8b(&m, &c, &t, &s);
    s.dp_degree = 1;
    s.fsdp_degree = 8;
    s.zero_stage = 3;
    s.ep_degree = 8;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "megatron: --use-torch-fsdp2 (fsdp_degree = 8, "
                                "zero_stage = 3, pp_degree = 1, ep_degree = 8) "
                                "is not supported with expert parallelism"));
    s.ep_degree = 1;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    s.dp_degree = 8;
    s.fsdp_degree = 1;
    s.zero_stage = 1;
    s.ep_degree = 8;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
}

/* The estimate of an MoE model: the routed experts held per rank (E / ep
 * experts of 3 h f_e, every layer), their optimizer states over the
 * expert-data-parallel group, model FLOPs as Megatron-Core's
 * num_floating_point_operations counts them, and the load imbalance
 * scaling the all-to-all. */
static void test_moe_estimate(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    static aps_estimate out;
    char err[APS_REASON_LEN];
    moe_8b(&m, &c, &t, &s);
    m.num_layers = 8; /* fits 80 GB */
    assert_int_equal(aps_model_validate(&m, err, sizeof err), APS_OK);
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_OK);
    s.ep_degree = 8;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    assert_int_equal(out.reason, APS_REASON_NONE);
    /* 8 layers x 1 expert x 3 x 4096 x 14336 */
    assert_true(out.stages[0].expert_params == 8.0 * 3.0 * 4096.0 * 14336.0);
    /* Megatron-Core FLOPs, B = 64, S = 4096: per layer 2 S (attention
     * 2 x 4096 (4096 + 1024) (Q, O, K, V) + top-2 x 3 x 4096 x 14336) + causal
     * core 2 S^2 x 4096, logits 2 S h V; x 3 */
    double S = 4096.0, h = 4096.0;
    double per_layer = 2.0 * S * (2.0 * h * (h + 1024.0) + 2.0 * 3.0 * h * 14336.0) +
                       2.0 * S * S * h;
    double want = 3.0 * 64.0 * (8.0 * per_layer + 2.0 * S * h * 128256.0);
    assert_true(fabs(out.model_flops_per_step / want - 1.0) < 1e-12);
    assert_true(out.perf_total[APS_PERF_EP_COMM] > 0.0);
    /* dispatch and combine move load x the balanced share: the bytes
     * term grows linearly with the load, the latency term stays */
    double ep[3];
    for (int k = 0; k < 3; k++) {
        t.moe_load_imbalance = 1.0 + k;
        assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
        ep[k] = out.perf_total[APS_PERF_EP_COMM];
    }
    assert_true(ep[1] > ep[0]);
    assert_true(fabs((ep[2] - ep[1]) / (ep[1] - ep[0]) - 1.0) < 1e-9);
    double ep1 = ep[0];
    t.moe_load_imbalance = 2.0;
    /* a capacity factor caps the busiest rank's load */
    s.moe_capacity_factor = 1.0;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    assert_true(fabs(out.perf_total[APS_PERF_EP_COMM] / ep1 - 1.0) < 1e-12);
}

/* all-to-all, pairwise: (n - 1) / n x bytes / bw + (n - 1) alpha. */
static void test_alltoall_time(void **state)
{
    (void)state;
    assert_true(fabs(aps_alltoall_time(8, 8e6, 1e9, 1e-6) - 0.007007) < 1e-12);
    assert_true(aps_alltoall_time(1, 8e6, 1e9, 1e-6) == 0.0);
}

/* All-to-all on a group across NVLink domains (comm.c): every rank's
 * remote share leaves through its own NIC while its local share moves on
 * NVLink: max(inter / (NIC x eff), intra / (NVLink x eff)) + (n - 1)
 * inter-node latencies; inside one domain the pairwise formula on NVLink. */
static void test_group_alltoall_time(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    moe_8b(&m, &c, &t, &s);
    c.num_devices = 64; /* 8 hosts of 8 */
    const aps_device *d = &c.device;
    double nic = d->inter_node_bandwidth * d->collective_efficiency;
    double nvl = d->intra_node_bandwidth * d->collective_efficiency;
    /* 64 ranks 1 apart: 8 per host; 56/64 of 64 MB remote, 7/64 local */
    assert_int_equal(aps_group_domain_members(&c, 1, 64), 8);
    double inter = 64e6 * 56.0 / 64.0, intra = 64e6 * 7.0 / 64.0;
    double want = inter / nic + 63.0 * d->inter_node_latency;
    assert_true(fabs(aps_group_alltoall_time(&c, 1, 64, intra, inter) / want -
                     1.0) < 1e-12);
    /* NVLink-bound when the local share dominates */
    want = 1e9 / nvl + 63.0 * d->inter_node_latency;
    assert_true(fabs(aps_group_alltoall_time(&c, 1, 64, 1e9, 1.0) / want -
                     1.0) < 1e-12);
    /* 8 ranks in one host: (n - 1) / n x bytes / NVLink + 7 alpha */
    assert_int_equal(aps_group_domain_members(&c, 1, 8), 8);
    want = 7.0 / 8.0 * 8e6 / nvl + 7.0 * d->intra_node_latency;
    assert_true(fabs(aps_group_alltoall_time(&c, 1, 8, 8e6, 0.0) / want -
                     1.0) < 1e-12);
    /* stride 4: 2 members per host */
    assert_int_equal(aps_group_domain_members(&c, 4, 16), 2);
}

/* Megatron's --recompute-modules (memory.c, moe.c, check.c): mlp frees the
 * dense MLP's inner activations, (2 x 2 + 2) T f / tp bytes in bf16 with
 * SwiGLU; moe re-runs each MoE layer's dispatch and combine once more in
 * the backward: EP time (fwd + bwd + fwd) / (fwd + bwd) = 1.5 x; the
 * checks follow TransformerConfig. */
static void test_recompute_modules(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    static aps_estimate out;
    char msg[APS_REASON_LEN];
    moe_8b(&m, &c, &t, &s);
    m.num_layers = 8;
    s.ep_degree = 8;
    s.layer_recompute = APS_RECOMPUTE_SELECTIVE;
    /* dense layer bytes, core_attn (default) vs core_attn + mlp */
    aps_model dense = m;
    dense.num_experts = dense.experts_per_token = dense.moe_ffn_hidden_size = 0;
    double base = aps_layer_activation_bytes(&dense, &t, &s,
                                             APS_RECOMPUTE_SELECTIVE);
    s.recompute_modules = APS_RCM_CORE_ATTN | APS_RCM_MLP;
    double less = aps_layer_activation_bytes(&dense, &t, &s,
                                             APS_RECOMPUTE_SELECTIVE);
    double T = 4096.0; /* mbs 1, no CP */
    assert_true(fabs((base - less) / (6.0 * T * 14336.0) - 1.0) < 1e-12);
    /* moe: one more dispatch and combine per MoE layer */
    s.recompute_modules = APS_RCM_CORE_ATTN;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    double ep0 = out.perf_total[APS_PERF_EP_COMM];
    double act0 = out.stages[0].mem[APS_MEM_ACTIVATIONS];
    double rc0 = out.perf_total[APS_PERF_RECOMPUTE];
    s.recompute_modules = APS_RCM_CORE_ATTN | APS_RCM_MOE;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    assert_true(fabs(out.perf_total[APS_PERF_EP_COMM] / ep0 - 1.5) < 1e-12);
    assert_true(out.stages[0].mem[APS_MEM_ACTIVATIONS] < act0);
    assert_true(out.perf_total[APS_PERF_RECOMPUTE] > rc0);
    /* checks */
    s.recompute_modules = APS_RCM_MLA_UP_PROJ;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "mla_up_proj needs multi-latent attention"));
    s.recompute_modules = APS_RCM_MOE_ACT;
    s.moe_grouped_gemm = 0;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    s.moe_grouped_gemm = APS_DEFAULT;
    /* ignored without selective recompute, as Megatron ignores them */
    s.layer_recompute = APS_RECOMPUTE_NONE;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
    s.recompute_modules = 1u << APS_RCM_COUNT;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_INVALID_DEGREE);
    assert_string_equal(aps_recompute_module_name(3), "mla_up_proj");
    assert_null(aps_recompute_module_name(APS_RCM_COUNT));
}

/* --moe-shared-expert-overlap (moe.c, stagetime.c): per MoE layer the
 * shared expert's forward hides min(shared fwd, dispatch + combine fwd),
 * its backward (2 x) min(2 shared fwd, ep bwd); the hidden part still
 * costs training.overlap_interference of its time.  A shared expert far
 * longer than the in-host all-to-all hides all of it: exposed =
 * interference x total; the all-gather dispatcher hides nothing. */
static void test_shared_expert_overlap(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    static aps_estimate out;
    moe_8b(&m, &c, &t, &s);
    m.num_layers = 8;
    m.shared_expert_ffn_hidden_size = 4 * 14336;
    s.ep_degree = 8;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    double total = out.perf_total[APS_PERF_EP_COMM];
    assert_true(fabs(out.perf_exposed[APS_PERF_EP_COMM] / total - 1.0) < 1e-12);
    t.moe_shared_expert_overlap = true;
    t.overlap_interference = 0.2; /* training.c's default */
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    assert_true(fabs(out.perf_total[APS_PERF_EP_COMM] / total - 1.0) < 1e-12);
    assert_true(fabs(out.perf_exposed[APS_PERF_EP_COMM] /
                     (t.overlap_interference * total) - 1.0) < 1e-9);
    s.moe_token_dispatcher = APS_MOE_ALLGATHER;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    assert_true(fabs(out.perf_exposed[APS_PERF_EP_COMM] /
                     out.perf_total[APS_PERF_EP_COMM] - 1.0) < 1e-12);
}

/* --overlap-moe-expert-parallel-comm (stagetime.c stage_moe, Megatron-LM
 * b0cc2706 combined_1f1b.py): the forward's dispatch and combine hide
 * behind the rank's backward compute, the backward's behind its forward
 * compute.  Experts 14336 wide on one host: compute far exceeds the
 * all-to-all, all of it hides and costs training.overlap_interference of
 * its time (exposed = 0.2 x total).  A link 10^4 x slower: the comm far
 * exceeds compute, hidden = the compute, so total - (compute fwd + bwd)
 * <= exposed <= total.  What TransformerConfig asserts is refused. */
static void test_ep_comm_overlap(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    char msg[APS_REASON_LEN];
    static aps_estimate out;
    moe_8b(&m, &c, &t, &s);
    m.num_layers = 8;
    s.ep_degree = 8;
    t.overlap_interference = 0.2; /* training.c's default */
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    double total = out.perf_total[APS_PERF_EP_COMM];
    double step = out.step_time;
    assert_true(fabs(out.perf_exposed[APS_PERF_EP_COMM] / total - 1.0) < 1e-12);
    t.overlap_moe_expert_parallel_comm = true;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    assert_true(fabs(out.perf_total[APS_PERF_EP_COMM] / total - 1.0) < 1e-12);
    assert_true(fabs(out.perf_exposed[APS_PERF_EP_COMM] /
                     (t.overlap_interference * total) - 1.0) < 1e-9);
    assert_true(out.step_time < step);
    /* comm-bound: hidden up to the compute */
    c.device.intra_node_bandwidth /= 1e4;
    assert_int_equal(aps_estimate_run(&m, &c, &t, &s, &out), APS_OK);
    double tot = out.perf_total[APS_PERF_EP_COMM];
    double comp = out.perf_total[APS_PERF_COMPUTE_FWD] +
                  out.perf_total[APS_PERF_COMPUTE_BWD];
    double ex = out.perf_exposed[APS_PERF_EP_COMM];
    assert_true(tot > 10.0 * comp);
    assert_true(ex >= tot - comp - 1e-9 * tot);
    assert_true(ex < tot);
    c.device.intra_node_bandwidth *= 1e4;
    /* refused as Megatron refuses it */
    s.ep_degree = 1;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "overlap_moe_expert_parallel_comm needs expert parallelism"));
    s.ep_degree = 8;
    s.moe_token_dispatcher = APS_MOE_ALLGATHER;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "alltoall or flex"));
    s.moe_token_dispatcher = APS_MOE_ALLTOALL;
    s.layer_recompute = APS_RECOMPUTE_FULL;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "full recompute"));
    /* the framework check alone says it, whatever the expert degree: the
     * search reads it to enumerate "none" apart from full recompute of no
     * layer (a new user lost every recompute-none strategy to it) */
    s.ep_degree = 1;
    assert_int_equal(aps_check_framework_model(&m, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "full recompute"));
    s.ep_degree = 8;
    s.layer_recompute = APS_RECOMPUTE_NONE;
    t.moe_shared_expert_overlap = true;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "excludes moe_shared_expert_overlap"));
    t.moe_shared_expert_overlap = false;
    s.dp_degree = 4;
    s.pp_degree = 2;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_FRAMEWORK_UNSUPPORTED);
    assert_non_null(strstr(msg, "virtual pipeline"));
    s.vpp_degree = 2;
    s.ep_degree = 4;
    assert_int_equal(aps_check_all(&m, &c, &t, &s, msg, sizeof msg),
                     APS_REASON_NONE);
}

/* exp_avg_bf16: Adam's two moments in bf16, 2 x (4 - 2) = 4 bytes less
 * per parameter (megatron: 4 + 4 + 4 -> 4 + 2 + 2). */
static void test_exp_avg_bf16(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    aps_strategy s;
    aps_state_bytes by;
    moe_8b(&m, &c, &t, &s);
    aps_model_state_bytes(&t, &s, &by);
    double full = by.optimizer;
    t.exp_avg_bf16 = true;
    aps_model_state_bytes(&t, &s, &by);
    assert_true(full == 12.0);
    assert_true(by.optimizer == 8.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_params_llama31_8b),
        cmocka_unit_test(test_model_params_llama31_70b),
        cmocka_unit_test(test_model_params_llama31_405b),
        cmocka_unit_test(test_model_params_llama2_7b),
        cmocka_unit_test(test_model_params_mistral_7b),
        cmocka_unit_test(test_model_params_qwen25_7b_qkv_bias),
        cmocka_unit_test(test_model_params_tied_counts_once),
        cmocka_unit_test(test_model_params_explicit_head_dim),
        cmocka_unit_test(test_model_params_gpt2_124m),
        cmocka_unit_test(test_model_params_norm_weightless_and_embedding_norm),
        cmocka_unit_test(test_model_qk_norm_head_weights),
        cmocka_unit_test(test_model_xielu_apertus_8b),
        cmocka_unit_test(test_model_validate_zero_hidden_size),
        cmocka_unit_test(test_model_validate_defaults_name_first_missing_field),
        cmocka_unit_test(test_model_validate_kv_heads_not_dividing),
        cmocka_unit_test(test_model_validate_absurd_size),
        cmocka_unit_test(test_model_validate_head_dim_needed),
        cmocka_unit_test(test_model_validate_learned_positions_need_length),
        cmocka_unit_test(test_model_validate_negative_and_null),
        cmocka_unit_test(test_model_validate_rope_and_norm_eps),
        cmocka_unit_test(test_model_validate_rotary_percent),
        cmocka_unit_test(test_model_validate_llama4_fields),
        cmocka_unit_test(test_moe_params_mixtral_8x7b),
        cmocka_unit_test(test_ep_comm_overlap),
        cmocka_unit_test(test_moe_params_qwen3_30b_a3b),
        cmocka_unit_test(test_moe_params_qwen15_moe_shared_expert),
        cmocka_unit_test(test_moe_layers_in_closed_form),
        cmocka_unit_test(test_moe_params_deepseek_v3_mla_mtp),
        cmocka_unit_test(test_moe_params_deepseek_v2_lite),
        cmocka_unit_test(test_dsa_params_deepseek_v32),
        cmocka_unit_test(test_dsa_keys_and_indexer_flops),
        cmocka_unit_test(test_dsa_topk_sharing),
        cmocka_unit_test(test_msa_keys_params_and_validate),
        cmocka_unit_test(test_dsa_validate_names_the_field),
        cmocka_unit_test(test_dsa_layer_cost),
        cmocka_unit_test(test_moe_params_dense_active_is_total),
        cmocka_unit_test(test_moe_validate_names_the_field),
        cmocka_unit_test(test_moe_router_settings),
        cmocka_unit_test(test_moe_constraints),
        cmocka_unit_test(test_moe_estimate),
        cmocka_unit_test(test_alltoall_time),
        cmocka_unit_test(test_group_alltoall_time),
        cmocka_unit_test(test_moe_torchtitan_mesh),
        cmocka_unit_test(test_moe_megatron_fsdp2_ep),
        cmocka_unit_test(test_recompute_modules),
        cmocka_unit_test(test_exp_avg_bf16),
        cmocka_unit_test(test_shared_expert_overlap),
        cmocka_unit_test(test_moe_params_gpt_oss_20b),
        cmocka_unit_test(test_moe_params_olmoe_full_width_qk_norm),
        cmocka_unit_test(test_model_new_attention_fields_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
