"""The rebalance lab: the rolling-update experiment, default settings against mitigations.

``lagless lab rebalance`` runs a consumer service of N ``lagless consume`` instances on a fresh
topic under a constant load, rolls it like a Kubernetes Deployment and measures rebalances, lag,
end-to-end latency, lost and duplicated records (see docs/rebalance-lab.md). Modules: ``model``
(the recorded data), ``scenarios`` (the named settings), ``rollout`` (surge / unavailable
planning), ``load`` (the constant-rate producer), ``sampler`` (independent lag readings),
``instances`` (the consumer processes), ``measures`` (figures from the data), ``page`` (HTML),
``runner`` (one scenario, then all).
"""
