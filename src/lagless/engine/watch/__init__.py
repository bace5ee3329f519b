"""Watch: health and readiness, gauges and lag, stalled records, progress; when a member is
settled in its group and idle."""
