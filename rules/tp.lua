-- Built-in rule "tp": heads, query groups, hidden and FFN sizes divisible by tp_degree; seq_length / cp_degree by tp_degree with sequence_parallel
-- Cheap (runs before the estimate); wraps the core check ctx:check("tp")
-- of src/core/check.c (MODELING.md section 5), so the numbers in the
-- message come from the core.
return {
  name = "tp",
  code = "TP_DIVISIBILITY",
  cheap = true,
  order = 30,
  core_check = "tp",
  description = "heads, query groups, hidden and FFN sizes divisible by tp_degree; seq_length / cp_degree by tp_degree with sequence_parallel",
  check = function(candidate, ctx)
    return ctx:check("tp", candidate)
  end,
}
