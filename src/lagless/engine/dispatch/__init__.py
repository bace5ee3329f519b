"""Dispatch: which held records may start now and in which task, per record (lanes: one per
partition, per key, or none) or per batch (runs of messages); partitions take turns."""
