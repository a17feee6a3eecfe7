-- examples/rules/tp_in_node.lua -- tensor parallelism must stay inside a node.
--
-- TP all-reduces (or reduce-scatters / all-gathers with sequence
-- parallelism) run on every layer, forward and backward; over NVLink they
-- are cheap, over the inter-node network they dominate the step.  The
-- search space usually keeps tp_degree <= 8 anyway; this rule makes the
-- constraint explicit for spaces that go wider (and for clusters with 4 or
-- 2 GPUs per node).  TP is the innermost parallel dimension, so a group of
-- tp_degree consecutive ranks stays in one node when tp_degree divides the
-- GPUs per node.
--
--   apsearch run examples/llama3_70b_h100.lua --fix tp_degree=4,8,16 \
--       --rules examples/rules/tp_in_node.lua
return {
  name = "tp_in_node",
  code = "TP_CROSSES_NODE",
  cheap = true,                 -- needs no estimate: runs before it
  description = "tensor-parallel group inside one node (tp_degree divides devices_per_node)",
  check = function(candidate, ctx)
    local tp = candidate.tp_degree or 1
    local per_node = ctx.cluster.devices_per_node
    if tp <= per_node and per_node % tp == 0 then
      return true
    end
    return false, "TP_CROSSES_NODE",
      string.format("tp_degree = %d does not fit in a node of %d GPUs", tp, per_node)
  end,
}
