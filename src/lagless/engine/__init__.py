"""The consumer engine: one poll loop, a worker pool, safe commits, backpressure."""
