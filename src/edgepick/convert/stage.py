"""The convert stage, called like every other stage: `run(request, store, progress)`. Each build
is converted (an identical earlier build is reused by `convert_gguf`) and its record stored under
kind `convert` (recipe.RECORD_KIND); a build that fails is an outcome with its reason, never the others' loss.
The plan turns its `convert:` section into this request (plan/requests.py) and reads the
outcomes back; the stage never touches a run's state."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from edgepick.convert.recipe import RECORD_KIND, ConvertRecipe, ConvertRecord
from edgepick.convert.run import convert_gguf
from edgepick.errors import EdgepickError
from edgepick.progress import ProgressEvent, Tick, silent


class ConvertBuild(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str  # the candidate it becomes
    source: str  # the GGUF converted
    recipe: ConvertRecipe
    out: str  # the engine folder written


class ConvertRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    builds: list[ConvertBuild] = Field(default_factory=list)


class ConvertOutcome(BaseModel):
    name: str
    record: ConvertRecord | None = None
    error: str | None = None  # why the build failed


def run(req: ConvertRequest, store, progress: Tick = silent) -> list[ConvertOutcome]:
    """One outcome per build, in the request's order."""
    out = []
    for i, b in enumerate(req.builds):
        progress(ProgressEvent(i, len(req.builds), b.name))
        try:
            rec = convert_gguf(b.source, b.recipe, b.out, quiet=True)
        except EdgepickError as exc:
            out.append(ConvertOutcome(name=b.name, error=str(exc)))
            continue
        if store is not None:
            store.put(RECORD_KIND, rec.build_key, rec.model_dump(mode="json"), label=b.name)
        out.append(ConvertOutcome(name=b.name, record=rec))
    progress(ProgressEvent(len(req.builds), len(req.builds), "done"))
    return out
