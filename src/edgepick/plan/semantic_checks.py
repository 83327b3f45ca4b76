"""Semantic checks of a schema-valid plan: everything it names must exist, before any work."""

from __future__ import annotations

import os
from typing import Callable

from edgepick.backends import backend_names
from edgepick.backends.registry import backend_class
from edgepick.convert.plan_section import check_convert
from edgepick.decide.scenarios import preset_names
from edgepick.devices.catalog import catalog, load_device
from edgepick.errors import EdgepickError, InputError
from edgepick.evaluate.eval_sets import specs_of
from edgepick.models.quant_types import normalize_ftype
from edgepick.plan.cluster_section import check_fleet
from edgepick.plan.prune_section import check_prune
from edgepick.plan.runtime_axes import combinations
from edgepick.records.model_ref import DEFAULT_ENGINE
from edgepick.units import parse_size

LineOf = Callable[[tuple], int | None]


def _model_ok(lp, value: str, backend: str | None = None) -> str | None:
    """None when the model resolves (and is then held by the plan), else the problem."""
    try:
        lp.ref(value, backend)
    except EdgepickError as exc:
        return str(exc)
    return None


def _check_engine_settings(lp, fail) -> None:
    """Each local engine the plan runs takes the runtime's engine knobs, typed by its own
    settings model (Backend.settings_model): a knob it does not have or a value it refuses is
    the plan's line, not a failure at load. An endpoint runs with its server's settings."""
    engines = {DEFAULT_ENGINE} if lp.plan.quantize else set()
    for c in lp.plan.candidates:
        ref = lp.ref(c.model, c.backend)
        if not ref.is_endpoint:
            engines.add(ref.backend)

    for name in sorted(engines):
        for runtime in combinations(lp.plan.runtime, lp.plan.runtime_axes):
            found = backend_class(name).settings_model.problem(runtime)
            if found:
                fail(("runtime", *found[0].split(".")), f"{found[1]} (engine {name})")


def check_plan(lp, line_of: LineOf) -> None:
    plan = lp.plan

    def fail(loc: tuple, problem: str) -> None:
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        raise InputError(lp.path, problem, line=line_of(loc), field=field)

    if not plan.candidates and not plan.quantize and not plan.convert:
        fail(("candidates",), "the plan names no candidates (give candidates, quantize or "
                              "convert)")
    _check_device(plan.device, lp, fail)

    check_fleet(plan, fail)
    for i, c in enumerate(plan.candidates):
        if c.backend and c.backend not in backend_names():
            fail(("candidates", i, "backend"),
                 f"unknown backend '{c.backend}' (known: {', '.join(backend_names())})")
        if (p := _model_ok(lp, c.model, c.backend)):
            fail(("candidates", i, "model"), p)
        if c.reference and (p := _model_ok(lp, c.reference)):
            fail(("candidates", i, "reference"), p)
    for i, q in enumerate(plan.quantize):
        if (p := _model_ok(lp, q.source)) or not lp.ref(q.source).path:
            fail(("quantize", i, "source"), p or "a quantization source must be a local GGUF "
                 "(`edgepick models pull` downloads a remote one)")
        if q.reference and (p := _model_ok(lp, q.reference)):
            fail(("quantize", i, "reference"), p)
        for j, t in enumerate(q.types):
            try:
                normalize_ftype(t)
            except (EdgepickError, KeyError, ValueError) as exc:
                fail(("quantize", i, "types", j), str(exc))
        if q.imatrix and not os.path.isfile(lp.resolve(q.imatrix)):
            fail(("quantize", i, "imatrix"), f"'{q.imatrix}': no such file")

    check_prune(lp, fail)
    check_convert(plan, lp, fail)
    _check_engine_settings(lp, fail)
    if plan.eval.enabled:
        many = isinstance(plan.eval.data, list)
        if many and not plan.eval.data:
            fail(("eval", "data"), "an empty list: name at least one eval set")
        for i, (spec, given) in enumerate(zip(lp.eval_specs(), specs_of(plan.eval.data, None))):
            where = ("eval", "data", i) if many else ("eval", "data")
            if not os.path.isfile(spec.set):
                fail(where, f"'{given.set}': no such eval set (or 'demo', 'demo-tools')")
            if any(os.path.realpath(s.set) == os.path.realpath(spec.set)
                   for s in lp.eval_specs()[:i]):
                fail(where, f"'{given.set}' is listed twice; give it one entry with its limit")
        if not plan.eval.reference:
            fail(("eval", "reference"), "missing: quality gaps need a reference model or endpoint")
        if (p := _model_ok(lp, plan.eval.reference)):
            fail(("eval", "reference"), p)
    if plan.fidelity.enabled and not os.path.isfile(lp.fidelity_text()):
        fail(("fidelity", "text"), f"'{plan.fidelity.text}': no such text file (or 'bundled')")
    if plan.bench.mem_limit not in (None, "budget"):
        try:
            parse_size(plan.bench.mem_limit)
        except ValueError as exc:
            fail(("bench", "mem_limit"), str(exc))
    _check_scenario(lp, fail)


def _check_device(device: str, lp, fail) -> None:
    if device == "local" or device in catalog():
        return
    path = lp.resolve(device)
    if not os.path.isfile(path):
        fail(("device",), f"unknown device '{device}': not a catalog name, 'local', or a file "
                          f"(catalog: {', '.join(catalog())})")
    load_device(path)  # a malformed profile file fails here, naming that file


def _check_scenario(lp, fail) -> None:
    sc = lp.plan.scenario
    name = lp.scenario_location()
    if sc.name not in preset_names() and not os.path.isfile(name):
        fail(("scenario", "name"), f"unknown scenario '{sc.name}' "
                                   f"(presets: {', '.join(preset_names())}, or a YAML file)")
    try:
        lp.scenario  # noqa: B018 - read once here, kept for the run
    except InputError as exc:
        if exc.field:
            fail(("scenario", "overrides", *exc.field.split(".")), exc.problem)
        raise
