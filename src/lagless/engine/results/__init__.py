"""Results: what finished comes back to the poll loop (completions, dead letters), is counted,
published as metrics in bulk, and written to the record ledger."""
