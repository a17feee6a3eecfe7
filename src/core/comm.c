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

double aps_alltoall_time(int64_t n, double bytes, double bw, double alpha)
{
    return aps_allgather_time(n, bytes, bw, alpha);
}

/** GPUs of the job that share one NVLink domain: the host
 *  (devices_per_node) unless cluster.nvlink_domain_size is larger (GB200 /
 *  GB300 NVL72: 4 GPUs per compute tray, up to 72 on the rack's NVLink
 *  switches; NVIDIA GB200 NVL72 datasheet, 2024), capped by the job's
 *  num_devices.  Ranks fill domains one after the other. */
static int64_t nvlink_domain(const aps_cluster *c)
{
    int64_t D = c->devices_per_node;
    if (c->nvlink_domain_size > D)
        D = c->nvlink_domain_size;
    return D < c->num_devices ? D : c->num_devices;
}

/** Intra-node bandwidth per GPU and direction of a group with `members`
 *  GPUs in one host, times collective_efficiency.  Behind a switch
 *  (intra_node_links = 0, NVSwitch) every group reaches the GPU's whole
 *  NVLink bandwidth.  In a fully connected mesh of L direct links per GPU
 *  (AMD Infinity Fabric: 7 links in an 8-GPU host, AMD CDNA 3 white
 *  paper) a GPU reaches its m - 1 peers over m - 1 links of
 *  intra_node_bandwidth / L each: a ring or all-to-all over the whole
 *  host drives all L, a pair (a point-to-point send, TP = 2) one. */
static double intra_bw(const aps_device *d, int64_t members)
{
    double bw = d->intra_node_bandwidth * d->collective_efficiency;
    int64_t links = d->intra_node_links;
    int64_t used = members > 1 ? members - 1 : 1;
    return (links > 0 && used < links) ? bw * (double)used / (double)links
                                       : bw;
}

int aps_group_link(const aps_cluster *c, int64_t stride, int64_t size,
                   double *bw, double *alpha)
{
    const aps_device *d = &c->device;
    int64_t G = nvlink_domain(c);
    int64_t span = stride * size;
    double nic = d->inter_node_bandwidth * d->collective_efficiency;
    /* Ranks are placed node by node, and nodes domain by domain; a group
     * of `size` ranks `stride` apart fills `span` consecutive ranks and
     * stays inside every NVLink domain (G: a host, or an NVL72 rack) when
     * span divides the domain size. */
    if (size <= 1 || (span <= G && G % span == 0)) {
        *bw = intra_bw(d, size);
        *alpha = d->intra_node_latency;
        return 1;
    }
    /* Across domains with g members per domain: every link of a ring
     * carries (n-1)/n of the tensor, including the one hop into each
     * domain.  NCCL runs one ring per NIC (rail-aligned channels), each
     * carrying 1/g of the data; every GPU has its own NIC, so the g
     * members' NICs together give g x NIC, capped by NVLink inside the
     * domain (NVIDIA/nccl issues 412, 687).  g = 1 (one member per
     * domain, e.g. DP across nodes with TP inside): the NIC. */
    int64_t g = (stride < G && G % stride == 0) ? G / stride : 1;
    if (g > size)
        g = size;
    double rails = (double)g * nic;
    double nvlink = intra_bw(d, g);
    *bw = rails < nvlink ? rails : nvlink;
    *alpha = d->inter_node_latency;
    return 0;
}

int64_t aps_group_domain_members(const aps_cluster *c, int64_t stride,
                                 int64_t size)
{
    int64_t G = nvlink_domain(c);
    if (size <= 1 || (stride * size <= G && G % (stride * size) == 0))
        return size;
    int64_t g = (stride < G && G % stride == 0) ? G / stride : 1;
    return g < size ? g : size;
}

double aps_group_alltoall_time(const aps_cluster *c, int64_t stride,
                               int64_t size, double intra, double inter)
{
    if (size <= 1)
        return 0.0;
    double bw, alpha;
    if (aps_group_link(c, stride, size, &bw, &alpha))
        return aps_alltoall_time(size, intra + inter, bw, alpha);
    const aps_device *d = &c->device;
    double nvlink = intra_bw(d, aps_group_domain_members(c, stride, size));
    double nic = d->inter_node_bandwidth * d->collective_efficiency;
    double t_nic = inter / nic, t_nvl = intra / nvlink;
    return (t_nic > t_nvl ? t_nic : t_nvl) +
           (double)(size - 1) * d->inter_node_latency;
}

int aps_p2p_link(const aps_cluster *c, int64_t stride, int64_t size,
                 double *bw, double *alpha)
{
    const aps_device *d = &c->device;
    int64_t G = nvlink_domain(c);
    int64_t span = stride * size;
    if (size <= 1 || (span <= G && G % span == 0)) {
        *bw = intra_bw(d, 2);
        *alpha = d->intra_node_latency;
        return 1;
    }
    /* One GPU sends to one GPU: a hop between NVLink domains goes through
     * the sender's NIC alone, and a ring of sends moves at its slowest
     * hop. */
    *bw = d->inter_node_bandwidth * d->collective_efficiency;
    *alpha = d->inter_node_latency;
    return 0;
}

int aps_p2p_pair_link(const aps_cluster *c, int64_t stride, int64_t a,
                      int64_t b, double *bw, double *alpha)
{
    const aps_device *d = &c->device;
    int64_t G = nvlink_domain(c);
    if (G > 0 && (a * stride) / G == (b * stride) / G) {
        *bw = intra_bw(d, 2);
        *alpha = d->intra_node_latency;
        return 1;
    }
    *bw = d->inter_node_bandwidth * d->collective_efficiency;
    *alpha = d->inter_node_latency;
    return 0;
}

double aps_interfered(const aps_training *t, double total, double exposed)
{
    double hidden = total - exposed;
    return exposed + (hidden > 0.0 ? t->overlap_interference * hidden : 0.0);
}
