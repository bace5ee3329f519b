"""The lab load's record template gives the bytes json.dumps gives, for any id prefix."""

from __future__ import annotations

import json

import pytest

from lagless.lab.load import job_encoder


@pytest.mark.parametrize("prefix", ["lab-t-1-", "", 'q"uo\\te-', "ünï-", "tab\t"])
def test_the_template_is_json_dumps(prefix: str) -> None:
    encode = job_encoder(prefix, 3)
    for i, ts in ((0, 0), (7, 1_764_300_000_123), (123_456_789, 42)):
        doc = {"id": f"{prefix}{i}", "sleep_ms": 3, "created_ts": ts}
        assert encode(i, ts) == json.dumps(doc, separators=(",", ":")).encode()
        assert json.loads(encode(i, ts)) == doc
