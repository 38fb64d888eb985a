"""What a run does: plans, tool-call arguments, pre-flight, backoff, budgets, notices and incidents."""
