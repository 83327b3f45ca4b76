"""Runtime settings as a candidate axis: a plan's `runtime:` may list
alternatives for the settings a practitioner tunes (seed 004 §5.2: the KV cache type; seed 000
§4.4 and seed 001 §4.3: threads and batch sizes; llama-bench's -ctk/-ctv, -fa, -t, -b, -ub, -mmp),
and each combination becomes a candidate of every model, named by the settings that vary
("smollm2-q8_0@kv=q8_0,fa=on").

    runtime: {n_ctx: 2048, kv_type: [f16, q8_0, q4_0], flash_attn: [true, false]}

Where the tensors live is one more (seed 001 §2.3, seed 003 §4.1): llama.cpp's `n_gpu_layers`,
`rpc`, `tensor_overrides`, `n_cpu_moe` and `tensor_split`, each value as its flag takes it,
make each combination's `placement` (records/placement.py).

The plan's `runtime` keeps one value per field (the first of each list), the base every stage
reads; the lists live in `RuntimeAxes`. A grid larger than `DEFAULT_MAX_COMBINATIONS` is refused
before any work unless the plan raises `runtime.max_combinations` or the run says `--yes`.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from edgepick.backends.registry import backend_class, backend_names
from edgepick.errors import EdgepickError
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.placement import FIELDS as PLACEMENT_FIELDS, Placement, axis_value
from edgepick.records.speculative import Speculation, parse_speculative

# field -> (short name in a candidate's name, how a value is written there); the order is the
# order of the name's parts
AXES: dict[str, str] = {"kv_type": "kv", "flash_attn": "fa", "threads": "t", "n_batch": "b",
                        "n_ubatch": "ub", "mmap": "mmap", "constrain": "constrain",
                        "speculative": "spec", "n_gpu_layers": "ngl", "n_cpu_moe": "cmoe",
                        "tensor_overrides": "ot", "tensor_split": "ts", "rpc": "rpc"}
DEFAULT_MAX_COMBINATIONS = 16
# A stated rough figure when the store has nothing better: one small model (SmolLM2-135M) through
# a short plan's bench, eval and fidelity on two cores (make run: about 3 minutes per candidate).
ROUGH_S_PER_CANDIDATE = 180.0


def _placed(field: str) -> Any:
    """One value of a placement axis, checked where the plan lists it (its line in an error)."""
    return Annotated[Any, BeforeValidator(lambda v: axis_value(field, v))]


GpuLayers, Overrides, Split, Rpc = (_placed(f) for f in ("n_gpu_layers", "tensor_overrides",
                                                         "tensor_split", "rpc"))


class RuntimeAxes(BaseModel):
    """The runtime fields a plan lists several values for (each list non-empty, no repeats)."""

    model_config = ConfigDict(extra="forbid")

    kv_type: list[str] | None = Field(None, min_length=1)
    flash_attn: list[bool] | None = Field(None, min_length=1)
    threads: list[int] | None = Field(None, min_length=1)
    n_batch: list[int] | None = Field(None, min_length=1)
    n_ubatch: list[int] | None = Field(None, min_length=1)
    mmap: list[bool] | None = Field(None, min_length=1)
    constrain: list[Literal["none", "grammar"]] | None = Field(None, min_length=1)
    # `none` or a kind of speculative decoding (records/speculative.py), each a candidate
    speculative: list[Speculation | None] | None = Field(None, min_length=1)
    # where the tensors live (records/placement.py), each value as llama.cpp's flag takes it;
    # together they make each candidate's placement
    n_gpu_layers: list[GpuLayers] | None = Field(None, min_length=1)
    n_cpu_moe: list[Annotated[int, Field(ge=0)]] | None = Field(None, min_length=1)
    tensor_overrides: list[Overrides] | None = Field(None, min_length=1)
    tensor_split: list[Split] | None = Field(None, min_length=1)
    rpc: list[Rpc] | None = Field(None, min_length=1)
    # the largest grid this plan accepts without `run --yes`
    max_combinations: int = Field(DEFAULT_MAX_COMBINATIONS, ge=1)

    @field_validator("speculative", mode="before")
    @classmethod
    def _speculative(cls, v: Any) -> Any:
        return [parse_speculative(x) for x in v] if isinstance(v, list) else v

    def lists(self) -> dict[str, list]:
        """field -> its values, for the fields listed with more than one value, in AXES order."""
        out = {}
        for f in AXES:
            vals = getattr(self, f)
            if vals and len(dict.fromkeys(vals)) > 1:
                out[f] = list(dict.fromkeys(vals))
        return out

    def count(self) -> int:
        n = 1
        for vals in self.lists().values():
            n *= len(vals)
        return n


def split_runtime(data: Any) -> Any:
    """A plan mapping with `runtime`'s lists moved to `runtime_axes` and the first value of each
    left in `runtime` (the base every stage reads). Anything else is left for validation."""
    if not isinstance(data, dict) or not isinstance(data.get("runtime"), dict):
        return data
    rt = dict(data["runtime"])
    axes: dict[str, Any] = {}
    for f in list(rt):
        if f in AXES and isinstance(rt[f], list):
            axes[f] = rt.pop(f)
            if axes[f]:
                rt[f] = axes[f][0]
    if "max_combinations" in rt:
        axes["max_combinations"] = rt.pop("max_combinations")
    if not axes:
        return data
    return {**data, "runtime": rt, "runtime_axes": axes}


def tag(settings: dict, fields: list[str]) -> str:
    """The readable, stable name of one combination: `kv=q8_0,fa=on,t=2`."""
    def word(v: Any) -> str:
        if isinstance(v, Speculation):
            return v.tag()
        if v is None:  # the speculative axis's plain decoding
            return "none"
        if isinstance(v, str):  # llama.cpp's lists (-ts 3,1) would read as two of the name's parts
            return v.replace(",", "+")
        return ("on" if v else "off") if isinstance(v, bool) else str(v)

    return ",".join(f"{AXES[f]}={word(settings[f])}" for f in fields)


def combinations(base: RuntimeSettings, axes: RuntimeAxes | None) -> list[RuntimeSettings]:
    """Every combination of the axes over `base`, each carrying its `variant` name; [base] when
    the plan lists no alternatives (then nothing is renamed and no stored key changes)."""
    lists = axes.lists() if axes is not None else {}
    if not lists:
        return [base]
    fields = list(lists)
    out = []
    for values in itertools.product(*lists.values()):
        update = dict(zip(fields, values))
        settings = {k: v for k, v in update.items() if k not in PLACEMENT_FIELDS}
        if len(settings) < len(update):
            settings["placement"] = _placement(base.placement, update)
        out.append(base.model_copy(update={**settings, "variant": tag(update, fields)}))
    return out


def _placement(base: Placement | None, update: dict) -> Placement:
    """`base` (the plan's first values) with this combination's placement fields."""
    data = base.model_dump(exclude={"devices"}) if base is not None else {}
    return Placement.model_validate(data | {k: v for k, v in update.items()
                                            if k in PLACEMENT_FIELDS})


def check_grid(axes: RuntimeAxes | None, n_models: int, yes: bool) -> None:
    """Refuse, in one line, a grid larger than the plan's cap unless the run said `--yes`."""
    if axes is None or yes:
        return
    n = axes.count()
    if n > axes.max_combinations:
        sizes = " × ".join(f"{len(v)} {f}" for f, v in axes.lists().items())
        raise EdgepickError(
            f"runtime: {sizes} = {n} settings combinations per model ({n * n_models} candidates) "
            f"is more than {axes.max_combinations}; list fewer values, raise "
            f"runtime.max_combinations in the plan, or run with --yes")


# settings that change what runs even when the plan gives them once (not only as an axis)
SET_ONCE = ("speculative", "placement")


def unhonoured(backend: str, axes: RuntimeAxes | None,
               base: RuntimeSettings | None = None) -> str | None:
    """One line when the engine `backend` does not apply a setting the plan varies (or sets, for
    SET_ONCE); None when it applies them all (the engine declares them:
    Backend.honoured_settings). The line names the engines that do apply them."""
    varied = list(dict.fromkeys("placement" if f in PLACEMENT_FIELDS else f
                                for f in (axes.lists() if axes is not None else [])))
    varied += [f for f in SET_ONCE if base is not None and getattr(base, f) is not None
               and f not in varied]
    if not varied:
        return None
    cls = backend_class(backend)
    missing = [f for f in varied if f not in cls.honoured_settings]
    if not missing:
        return None
    others = [n for n in backend_names() if n != backend
              and set(missing) <= backend_class(n).honoured_settings]
    where = (f"; the {' or '.join(others)} engine does (give the model `backend: "
             f"{others[0]}`)") if others else ""
    return (f"runtime: the {backend} engine does not apply {', '.join(missing)} (it applies "
            f"{', '.join(sorted(cls.honoured_settings)) or 'none of the runtime settings'}); "
            f"varying it would measure a difference it never made{where}")


def statement(n_candidates: int, n_combos: int, seconds: float | None, source: str) -> str:
    """What the run says before any work: how many candidates and roughly how long."""
    per = seconds if seconds is not None else ROUGH_S_PER_CANDIDATE
    total_min = n_candidates * per / 60
    return (f"runtime axes: {n_combos} settings combinations per model, {n_candidates} "
            f"candidates; roughly {total_min:.0f} min ({per / 60:.1f} min per candidate, "
            f"{source})")
