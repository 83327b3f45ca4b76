"""The input layer: what a user typed (a path, a bundled name, an endpoint) becomes a `ModelRef`
here, and the files derived from it (an F16 of a bundled Q4_1, an onnxruntime-genai folder) are
built here, once, so records stay data and engines only ever load their own format
(docs/architecture.md). The CLI and the plan loader call it; stages never do."""

from edgepick.inputs.bundled import BUNDLED
from edgepick.inputs.models import engine_of, resolve_ref

__all__ = ["BUNDLED", "engine_of", "resolve_ref"]
