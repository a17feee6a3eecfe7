/*
 * fixtures_internal.h -- test helpers over the core's internal stages
 * (src/core/internal.h): one layer's costs and one rank's stage time, as
 * aps_estimate_run builds them, for tests that assert a stage term
 * directly.  Include after fixtures.h and internal.h.
 */
#ifndef APS_TEST_FIXTURES_INTERNAL_H
#define APS_TEST_FIXTURES_INTERNAL_H

/** The mean layer's costs of s into lc: activations, times and the MoE
 *  differences (estimate.c's order). */
static inline void fx_layer_cost(const aps_model *m, const aps_cluster *c,
                                 const aps_training *t, const aps_strategy *s,
                                 aps_layer_cost *lc)
{
    aps_layer_activations(m, t, s, NULL, lc);
    aps_layer_times(m, c, t, s, NULL, lc);
    aps_moe_layer_cost(m, c, t, s, &lc->moe);
}

/** Rank i's stage time of s into st (its layout must build). */
static inline void fx_stage_time(const aps_model *m, const aps_cluster *c,
                                 const aps_training *t, const aps_strategy *s,
                                 int64_t i, aps_stage_time *st)
{
    char msg[APS_REASON_LEN];
    aps_layout lay;
    assert_int_equal(aps_layout_build(m, t, s, &lay, msg, sizeof msg),
                     APS_REASON_NONE);
    aps_dp_plan plan;
    aps_dp_plan_build(t, s, &plan);
    aps_layer_cost lc;
    fx_layer_cost(m, c, t, s, &lc);
    aps_stage_time_build(m, c, t, s, &lay, &plan, &lc, i, false, st);
}

#endif
