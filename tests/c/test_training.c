/*
 * test_training.c -- src/core/training.c: the documented defaults of
 * training_config and strategy_config, and validation naming the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixtures.h"

/* MODELING.md s.1 and training.c: bf16, Adam, Megatron profile, flash on,
 * dropout off; make_vocab_size_divisible_by 0 (the framework default); 1 GiB margin;
 * 5% fragmentation; torch DDP bucket_cap_mb 25 (MiB), 2 in flight;
 * overlaps dp 0.8, fsdp 0.9, tp 0, pp p2p 0. */
static void test_training_defaults(void **state)
{
    (void)state;
    aps_training t;
    memset(&t, 0xff, sizeof t);
    aps_training_defaults(&t);
    assert_int_equal(t.precision, APS_PREC_BF16);
    assert_int_equal(t.optimizer, APS_OPT_ADAM);
    assert_int_equal(t.framework, APS_FW_MEGATRON);
    assert_true(t.flash_attention);
    assert_int_equal(t.dropout, APS_DEFAULT); /* the framework's */
    assert_int_equal(t.expandable_segments, APS_DEFAULT);
    assert_int_equal(t.memory_limit_kind, APS_MEM_KIND_RESERVED);
    ASSERT_REL(t.allocator_fragmentation, 0.05, 0);
    ASSERT_REL(t.allocator_fragmentation_expandable, 0.05, 0);
    assert_int_equal(t.vocab_size_divisible_by, 0); /* framework default */
    ASSERT_REL(t.memory_limit_bytes, 0.0, 0);
    ASSERT_REL(t.memory_margin_bytes, 1073741824.0, 0);
    ASSERT_REL(t.allocator_fragmentation, 0.05, REL);
    ASSERT_REL(t.ddp_bucket_bytes, 25.0 * 1048576.0, 0); /* 26,214,400 */
    assert_int_equal(t.ddp_buckets_in_flight, 2);
    ASSERT_REL(t.dp_overlap, 0.8, REL);
    ASSERT_REL(t.fsdp_overlap, 0.9, REL);
    ASSERT_REL(t.tp_overlap, 0.0, 0);
    ASSERT_REL(t.pp_p2p_overlap, 0.0, 0);
    /* B and s are left 0 so validation names what the caller forgot */
    char err[256] = "";
    assert_int_equal(aps_training_validate(&t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "global_batch_size");
}

static void expect_training_einval(const aps_training *t, const char *field)
{
    char err[256] = "";
    aps_status st = aps_training_validate(t, err, sizeof err);
    if (st != APS_EINVAL)
        fail_msg("expected EINVAL naming %s, got %s", field,
                 aps_status_name(st));
    ASSERT_HAS(err, field);
}

static void test_training_validate(void **state)
{
    (void)state;
    aps_training t;
    fx_training(&t, 8, 4096);
    t.seq_length = 0;
    expect_training_einval(&t, "seq_length");
    fx_training(&t, 8, 4096);
    t.vocab_size_divisible_by = -1;
    expect_training_einval(&t, "vocab_size_divisible_by");
    fx_training(&t, 8, 4096);
    t.memory_limit_bytes = -1.0;
    expect_training_einval(&t, "memory_limit_bytes");
    fx_training(&t, 8, 4096);
    t.memory_margin_bytes = INFINITY;
    expect_training_einval(&t, "memory_margin_bytes");
    fx_training(&t, 8, 4096);
    t.dp_overlap = NAN;
    expect_training_einval(&t, "dp_overlap");
    fx_training(&t, 8, 4096);
    t.tp_overlap = 1.5;
    expect_training_einval(&t, "tp_overlap");
    fx_training(&t, 8, 4096);
    t.allocator_fragmentation = -0.1;
    expect_training_einval(&t, "allocator_fragmentation");
    fx_training(&t, 8, 4096);
    t.ddp_buckets_in_flight = 65;
    expect_training_einval(&t, "ddp_buckets_in_flight");
    fx_training(&t, 8, 4096);
    t.framework = (aps_framework)7;
    expect_training_einval(&t, "enum");
    /* TorchTitan's chunked loss only */
    fx_training(&t, 8, 4096);
    t.framework = APS_FW_DEEPSPEED;
    t.loss_chunks = 4;
    expect_training_einval(&t, "loss_chunks");
    char err[256] = "";
    assert_int_equal(aps_training_validate(NULL, err, sizeof err), APS_EINVAL);
}

/* core.h: all degrees 1, b = 1, m derived (0), SP on, zero_stage 0, no
 * recompute, reshard_after_forward on, recompute_num_layers all -1. */
static void test_strategy_defaults(void **state)
{
    (void)state;
    aps_strategy s;
    memset(&s, 0x5a, sizeof s);
    aps_strategy_defaults(&s);
    assert_int_equal(s.dp_degree, 1);
    assert_int_equal(s.fsdp_degree, 1);
    assert_int_equal(s.tp_degree, 1);
    assert_int_equal(s.pp_degree, 1);
    assert_int_equal(s.vpp_degree, 1);
    assert_int_equal(s.cp_degree, 1);
    assert_int_equal(s.micro_batch_size, 1);
    assert_int_equal(s.micro_batch_num, 0);
    assert_int_equal(s.zero_stage, 0);
    assert_true(s.sequence_parallel);
    assert_true(s.reshard_after_forward);
    assert_false(s.allow_idle_devices);
    assert_false(s.hsdp);
    assert_int_equal(s.layer_recompute, APS_RECOMPUTE_NONE);
    assert_int_equal(s.cp_comm_type, APS_CP_P2P);
    for (int i = 0; i < APS_MAX_STAGES; i++) {
        assert_int_equal(s.recompute_num_layers[i], -1);
        assert_int_equal(s.stage_partition[i], 0);
        assert_int_equal(s.layer_offset[i], 0);
    }
}

/* aps_inputs_validate: the checks that span model, cluster and training. */
static void test_inputs_validate(void **state)
{
    (void)state;
    aps_model m;
    aps_cluster c;
    aps_training t;
    char err[256];
    fx_llama31_8b(&m);
    fx_h100(&c, 8);
    fx_training(&t, 64, 8192);
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_OK);
    /* a limit above the 81,559 MiB of the H100 */
    t.memory_limit_bytes = 200.0 * 1073741824.0;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "training.memory_limit_bytes: 200.00 GiB exceeds");
    t.memory_limit_bytes = 0;
    /* fp8 on an A100, which has no fp8 tensor cores */
    aps_device_preset("a100-sxm4-80gb", &c.device);
    t.precision = APS_PREC_FP8;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_ENOTIMPL);
    ASSERT_HAS(err, "training.precision: fp8 on a100-sxm4-80gb");
    t.precision = APS_PREC_BF16;
    /* activation offload of every layer (or more): Megatron offloads
     * fewer layers than the model has */
    aps_device_preset("h100-sxm-80gb", &c.device);
    t.framework = APS_FW_MEGATRON;
    t.activation_offload_layers = 31;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_OK);
    t.activation_offload_layers = 32;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "training.activation_offload_layers: 32");
    ASSERT_HAS(err, "num_layers = 32");
    t.activation_offload_layers = 1000;
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_EINVAL);
    t.activation_offload_layers = 0;
    /* GPT-2: 1,024 learned positions, a 2,048-token sequence */
    fx_gpt2_124m(&m);
    fx_training(&t, 8, 2048);
    assert_int_equal(aps_inputs_validate(&m, &c, &t, err, sizeof err), APS_EINVAL);
    ASSERT_HAS(err, "max_position_embeddings = 1024");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_training_defaults),
        cmocka_unit_test(test_training_validate),
        cmocka_unit_test(test_strategy_defaults),
        cmocka_unit_test(test_inputs_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
