/*
 * comm.c -- collective and point-to-point times (alpha-beta model) and the
 * link a process group uses.
 *
 * Ring algorithms (Thakur, Rabenseifner, Gropp 2005, "Optimization of
 * Collective Communication Operations in MPICH"; NCCL docs PERFORMANCE.md,
 * "bus bandwidth"): with n ranks and a full tensor of `bytes`,
 *   all-reduce      2 (n-1)/n * bytes / bw + 2 (n-1) alpha
 *   all-gather      (n-1)/n * bytes / bw + (n-1) alpha
 *   reduce-scatter  (n-1)/n * bytes / bw + (n-1) alpha
 * bw is the effective per-GPU bandwidth of the group (aps_group_link),
 * link bandwidths times the device's collective_efficiency, so doubling the
 * bandwidth of the binding link halves the bandwidth term.
 */
#include "internal.h"

double aps_allreduce_time(int64_t n, double bytes, double bw, double alpha)
{
    if (n <= 1)
        return 0.0;
    double k = (double)(n - 1);
    return 2.0 * k / (double)n * bytes / bw + 2.0 * k * alpha;
}

double aps_allgather_time(int64_t n, double bytes, double bw, double alpha)
{
    if (n <= 1)
        return 0.0;
    double k = (double)(n - 1);
    return k / (double)n * bytes / bw + k * alpha;
}

double aps_reducescatter_time(int64_t n, double bytes, double bw,
                              double alpha)
{
    return aps_allgather_time(n, bytes, bw, alpha);
}

int aps_group_link(const aps_cluster *c, int64_t stride, int64_t size,
                   double *bw, double *alpha)
{
    const aps_device *d = &c->device;
    int64_t G = c->devices_per_node < c->num_devices ? c->devices_per_node
                                                     : c->num_devices;
    int64_t span = stride * size;
    double nvlink = d->intra_node_bandwidth * d->collective_efficiency;
    double nic = d->inter_node_bandwidth * d->collective_efficiency;
    /* Ranks are placed node by node; a group of `size` ranks `stride`
     * apart fills `span` consecutive ranks and stays inside every node
     * when span divides the node size. */
    if (size <= 1 || (span <= G && G % span == 0)) {
        *bw = nvlink;
        *alpha = d->intra_node_latency;
        return 1;
    }
    /* Across nodes: g members per node, k nodes.  NCCL runs one ring per
     * NIC (rail-aligned), so of the (n-1)/n * bytes every rank moves, the
     * (k-1)/k * bytes each node must receive enter through g NICs, while
     * the rest moves over NVLink.  The slower path sets the effective
     * bandwidth of the ring formula.  g = 1 (one member per node, e.g. DP
     * across nodes with TP inside) gives exactly the per-GPU NIC. */
    int64_t g = (stride < G && G % stride == 0) ? G / stride : 1;
    if (g > size)
        g = size;
    int64_t k = (size + g - 1) / g;
    double n = (double)size, kk = (double)k;
    double cross = ((kk - 1.0) / kk) / ((n - 1.0) / n);
    double t_inter = cross / ((double)g * nic);
    double t_intra = g > 1 ? 1.0 / nvlink : 0.0;
    *bw = 1.0 / (t_inter > t_intra ? t_inter : t_intra);
    *alpha = d->inter_node_latency;
    return 0;
}
