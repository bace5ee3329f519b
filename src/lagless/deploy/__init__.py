"""From an App to Kubernetes: manifests derived from the App's own settings.

Module map: ``options`` (what ``lagless deploy render`` is asked), ``drain`` (how long a
stopping App may take: the grace period), ``plan`` (everything derived from the App, checked
against the options), ``manifests`` (the Kubernetes objects), ``render`` (YAML out, the
partition count asked of the cluster), ``reader`` (a rendered manifest read back, for the
rebalance lab). See docs/deploy.md.
"""
