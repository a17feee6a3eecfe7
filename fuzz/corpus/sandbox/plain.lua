return c.tp_degree <= ctx.cluster.devices_per_node
