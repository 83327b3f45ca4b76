"""A candidate: one model (a `ModelRef`, which names its engine) run with fixed runtime settings.

`RuntimeSettings` is the one record of engine settings: the plan's `runtime:` section, the CLI's
runtime flags (their defaults are read from here), bench, eval, fidelity and the server all use it
(seed 000 §3.4: candidates are compared at equal quantization, context, batch and threads).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, computed_field, field_validator,
                      model_serializer, model_validator)

from edgepick.records.model_ref import ModelRef
from edgepick.records.placement import FIELDS as PLACEMENT_FIELDS, Placement
from edgepick.records.speculative import Speculation, parse_speculative


class AdapterSetting(BaseModel):
    """A LoRA adapter loaded with the model (seed 003 §7.1: a base model plus a task adapter).
    Its content (SHA-256) and scale enter stored keys; its path does not, so a moved file keeps
    its results."""

    model_config = ConfigDict(extra="forbid")

    path: str
    sha256: str
    scale: float = Field(1.0, gt=0)


# llama.cpp's own knobs (backends/llama_cpp_support.py LlamaCppSettings types them), kept flat
# in RuntimeSettings so that old plans and stored keys stay as they were. Any other engine
# refuses one set away from its default (EngineSettings.problem), in one line, when the plan
# loads.
ENGINE_FLAT = frozenset({"kv_type", "flash_attn", "swa_full", "mmap"})


def _move(src: dict, src_name: str, dst: dict, dst_name: str, keys) -> None:
    """`keys` of `src` moved into `dst`; one given in both with two values is one line."""
    for key in sorted(set(keys) & src.keys()):
        value = src.pop(key)
        if key in dst and dst[key] != value:
            raise ValueError(f"{key} is given twice: {dst_name}{key} {dst[key]!r} and "
                             f"{src_name}{key} {value!r}")
        dst[key] = value


class RuntimeSettings(BaseModel):
    """What every engine is run with: threads, context, batch sizes, seed. An engine's own knobs
    belong to the engine (`Backend.settings_model`, e.g. backends/llama_cpp_support.py's
    LlamaCppSettings); llama.cpp's four are still accepted here flat, as plans and the CLI
    always wrote them, so that old plans load and stored keys do not change. A plugin engine's
    knobs go in `engine` and are validated by that engine when it loads."""

    model_config = ConfigDict(extra="forbid")

    threads: int = Field(2, ge=1)
    n_ctx: int = Field(2048, ge=4)
    n_batch: int = Field(512, ge=1)
    n_ubatch: int = Field(512, ge=1)
    seed: int = 42
    # llama.cpp's (LlamaCppSettings), flat for compatibility
    kv_type: str = "f16"  # f16 | q8_0 | q4_0 (llama.cpp cache types)
    flash_attn: bool = True
    # Sliding-window layers keep only their window (as llama-server does), not the full context.
    swa_full: bool = False
    mmap: bool = True
    engine: dict[str, Any] = Field(default_factory=dict)  # an engine's own further knobs
    # One combination of a plan's runtime axes (plan/runtime_axes.py), named by the settings
    # that vary, e.g. "kv=q8_0,fa=on": the candidate of that model with these settings. Not an
    # engine setting; None (no axes) is left out of stored keys and payloads.
    variant: str | None = None
    adapter: AdapterSetting | None = None  # a LoRA adapter (engines that honour "adapter")
    # "grammar": an eval item with a schema or a label set is decoded under a grammar that only
    # admits a valid answer (seed 000 §2.3; engines that honour "constrain"); "none": free
    constrain: Literal["none", "grammar"] = "none"
    # speculative decoding (records/speculative.py; engines that honour "speculative"); None:
    # plain decoding, left out of stored keys and payloads
    speculative: Speculation | None = None
    # where each tensor lives (records/placement.py; engines that honour "placement"): given
    # flat with llama.cpp's names (n_gpu_layers, rpc, ...) or as one mapping; None: the
    # engine's own default, left out of stored keys and payloads
    placement: Placement | None = None

    @field_validator("speculative", mode="before")
    @classmethod
    def _speculative(cls, v: Any) -> Any:
        return parse_speculative(v)

    @model_validator(mode="before")
    @classmethod
    def _flat_placement(cls, data: Any) -> Any:
        # a plan writes `n_gpu_layers: all` beside `threads: 2`, as llama.cpp's flags sit
        # beside -t; the record keeps them together, as fit --json and deploy.yaml show them
        if not isinstance(data, dict) or not set(PLACEMENT_FIELDS) & data.keys():
            return data
        data = dict(data)
        place = data.get("placement") or {}
        place = dict(place.model_dump(exclude_unset=True) if isinstance(place, Placement)
                     else place)
        _move(data, "", place, "placement.", PLACEMENT_FIELDS)
        data["placement"] = place
        return data

    @model_validator(mode="before")
    @classmethod
    def _flat_engine_knobs(cls, data: Any) -> Any:
        # llama.cpp's knobs written in the `engine` map are the flat fields: one spelling, so
        # every reader (fit, serve's command line, fidelity) and every stored key sees them alike
        engine = data.get("engine") if isinstance(data, dict) else None
        if not isinstance(engine, dict) or not ENGINE_FLAT & engine.keys():
            return data
        data, engine = dict(data), dict(engine)
        _move(engine, "engine.", data, "", ENGINE_FLAT)
        data["engine"] = engine
        return data

    @model_serializer(mode="wrap")
    def _without_empty_engine(self, handler: Any) -> dict:
        # an empty `engine`, no `variant` and no `adapter` are left out, so stored keys and
        # payloads stay as they were
        data = handler(self)
        if not data.get("engine"):
            data.pop("engine", None)
        for optional in ("variant", "adapter", "speculative", "placement"):
            if data.get(optional) is None:
                data.pop(optional, None)
        if data.get("constrain") == "none":
            data.pop("constrain", None)
        if isinstance(data.get("placement"), dict):  # what is set: deploy.yaml reads as flags do
            data["placement"] = {k: v for k, v in data["placement"].items()
                                 if v or k == "n_gpu_layers"}
        return data

    def key_dict(self) -> dict:
        data = self.model_dump()
        if self.adapter is not None:  # the adapter's content, not where it lies
            data["adapter"] = {"sha256": self.adapter.sha256, "scale": self.adapter.scale}
        if self.speculative is not None:  # the draft's content, not where it lies
            data["speculative"] = self.speculative.key_dict()
        return data


DEFAULTS = RuntimeSettings()  # the CLI's runtime flags take their defaults from here


class Candidate(BaseModel):
    """`ref` says which model and engine; `model` and `backend` are derived from it and kept in
    the serialized form because stored payloads are read by model path."""

    model_config = ConfigDict(extra="forbid")

    ref: ModelRef
    settings: RuntimeSettings = Field(default_factory=RuntimeSettings)
    label: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_spec(cls, data: Any) -> Any:
        # Serialized candidates carry the derived fields; a bare `model` locator (a path or an
        # endpoint, as tests and scripts give it) becomes its ModelRef. Bundled names are
        # resolved before this, by edgepick.inputs.
        if not isinstance(data, dict):
            return data
        data = dict(data)
        model, backend = data.pop("model", None), data.pop("backend", None)
        if "ref" not in data and model is not None:
            data["ref"] = ModelRef.of(model, backend=backend)
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def model(self) -> str:
        """The locator the engine is given: a file path, or `url#served_name`."""
        return self.ref.locator

    @computed_field  # type: ignore[prop-decorator]
    @property
    def backend(self) -> str:
        return self.ref.backend

    @property
    def name(self) -> str:
        return self.label or self.ref.label
