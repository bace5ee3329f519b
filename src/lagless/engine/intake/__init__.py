"""Intake: poll the consumer, split what came into per-partition runs, offer them within each
partition's bound (pause when full, resume when drained)."""
