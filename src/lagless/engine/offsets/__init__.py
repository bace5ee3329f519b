"""Offsets: what is safe to commit. Per partition a tracker (the first unfinished offset and
the offset map above it); the commit policy; commits, their acknowledgements, refusals and
the offsets carried across a rebalance."""
