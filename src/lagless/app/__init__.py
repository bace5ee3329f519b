"""Consumer services on the engine: :class:`App`, decorated handlers, typed records, outputs.

Module map: ``app`` (the App and its handler registry), ``handlers`` (a user's function as an
engine handler), ``codecs`` (typed keys and values), ``outputs`` (output records, produced and
acknowledged before the input counts as done), ``batch`` (batch handlers), ``runner`` (one
engine per handler), ``health`` (/healthz, /readyz, /metrics), ``signals``, ``registry``
(Schema Registry values, an extra). See docs/app.md.
"""

from lagless.app.app import App
from lagless.app.batch import BatchResult
from lagless.app.outputs import INPUT_KEY, Out, OutputError

__all__ = ["INPUT_KEY", "App", "BatchResult", "Out", "OutputError"]
