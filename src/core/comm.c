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
 * bw is the per-GPU one-direction link bandwidth times the device's
 * collective_efficiency, so doubling a bandwidth halves the bandwidth term.
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
    int64_t G = c->devices_per_node;
    int64_t span = stride * size;
    /* Ranks are placed node by node; a group of `size` ranks `stride`
     * apart fills `span` consecutive ranks.  It stays inside every node
     * when span divides the node size (and so never straddles two). */
    int intra = size <= 1 || (span <= G && G % span == 0) ||
                (c->num_devices <= G && span <= c->num_devices);
    *bw = (intra ? d->intra_node_bandwidth : d->inter_node_bandwidth) *
          d->collective_efficiency;
    *alpha = intra ? d->intra_node_latency : d->inter_node_latency;
    return intra;
}
