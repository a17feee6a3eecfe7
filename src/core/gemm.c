/*
 * gemm.c -- seconds of one GEMM on one device by its shape.
 *
 * A tiled GEMM kernel (cuBLASLt, CUTLASS, hipBLASLt, DeepGEMM) splits the
 * M x N output into tiles of tm x tn, hands one tile at a time to each SM
 * and runs every tile's K loop through a software pipeline.  Four
 * mechanisms then set the fraction of the large-GEMM rate it reaches:
 *   tile quantization  a partly empty edge tile does a full tile's work:
 *                      M N / (ceil(M/tm) tm ceil(N/tn) tn);
 *   wave quantization  the tiles run in ceil(tiles / SMs) waves, the last
 *                      one partly idle: tiles / (ceil(tiles/SMs) SMs);
 *   K depth            the pipeline's prologue and epilogue (loading the
 *                      first stages, writing the tile) cost about k0 of K:
 *                      K / (K + k0);
 *   fixed time         a kernel's launch-to-first-tile and drain time, t0
 *                      seconds, whatever its size.
 * (NVIDIA, "Matrix Multiplication Background User's Guide", Deep Learning
 * Performance docs, s. "Dimension Quantization Effects" describes the
 * first two.)  The device fields gemm_tile_m, gemm_tile_n, sm_count,
 * gemm_half_dim (k0) and gemm_fixed_seconds (t0) hold them; presets.c
 * gives their sources and the fit to published microbenchmarks.
 * Closed form: no loop over tiles (the function is on the search's hot
 * path).
 */
#include "internal.h"

#include <math.h>

double aps_gemm_shape_factor(const aps_device *d, double M, double N,
                             double K)
{
    double f = K / (K + d->gemm_half_dim);
    double tm = d->gemm_tile_m, tn = d->gemm_tile_n;
    if (!(tm > 0 && tn > 0))
        return f;
    double mt = ceil(M / tm), nt = ceil(N / tn);
    f *= M * N / (mt * tm * nt * tn);
    if (d->sm_count > 0) {
        double tiles = mt * nt, sms = (double)d->sm_count;
        f *= tiles / (ceil(tiles / sms) * sms);
    }
    return f;
}

double aps_gemm_time(const aps_device *d, aps_precision p, double M,
                     double N, double K)
{
    if (!(M > 0 && N > 0 && K > 0))
        return 0.0; /* no GEMM (an empty shard, no expert tokens) */
    double rate = aps_peak_flops(d, p) * aps_gemm_eta_max(d, p) *
                  aps_gemm_shape_factor(d, M, N, K);
    return d->gemm_fixed_seconds + 2.0 * M * N * K / rate;
}
