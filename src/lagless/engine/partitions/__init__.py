"""Partitions: the state of each assigned partition, and the rebalance callbacks that make,
drain, commit and drop it."""
