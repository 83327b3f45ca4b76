"""Read and check a plan before any work starts: schema (pydantic, extra fields forbidden), then
every file, device, scenario, backend and quant type it names. Errors name the plan file, the
line and the field path, in one line."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

import yaml
from pydantic import ValidationError

from edgepick.decide.scenarios import load_scenario, preset_names
from edgepick.errors import EdgepickError, InputError, pydantic_problem
from edgepick.evaluate.eval_sets import set_path, specs_of
from edgepick.plan.model import Plan
from edgepick.inputs import resolve_ref
from edgepick.inputs.remote import is_remote
from edgepick.inputs.remote_pin import resolve_pinned
from edgepick.plan.semantic_checks import check_plan
from edgepick.records.model_ref import ModelRef
from edgepick.yaml_input import parse_yaml, read_user_text


@dataclass
class LoadedPlan:
    plan: Plan
    path: Path
    base: Path  # relative paths in the plan are relative to the plan's folder
    yes: bool = False  # `run --yes`: a runtime grid over the plan's cap is run anyway
    _refs: dict = field(default_factory=dict, repr=False)
    _scenario: tuple | None = field(default=None, repr=False)  # (plan section, Scenario)

    def resolve(self, p: str) -> str:
        """A file path as given, made absolute against the plan's folder."""
        return p if os.path.isabs(p) else str(self.base / p)

    def ref(self, spec: str, backend: str | None = None, label: str | None = None) -> ModelRef:
        """A model the plan names, resolved once (the checks resolve every one first). A
        candidate's remote GGUF is read header-only and pinned in the output folder, so later
        runs of the plan make no request (inputs/remote_pin.py)."""
        key = (spec, backend, label)
        if key not in self._refs and is_remote(spec) and \
                any(c.model == spec for c in self.plan.candidates):
            self._refs[key] = resolve_pinned(spec, self.output / "remote", backend=backend,
                                             label=label)
        if key not in self._refs:
            self._refs[key] = resolve_ref(spec, backend=backend, label=label, base_dir=self.base,
                                          api_key_env=self.key_env(spec))
        return self._refs[key]

    def use_reference_key_env(self, name: str) -> None:
        """`run --reference-key-env NAME`: the reference endpoint's key variable, over the plan's."""
        ref = self.plan.eval.reference
        if not ref or "://" not in ref:
            raise EdgepickError(f"--reference-key-env goes with an endpoint reference; the plan's "
                                f"eval.reference is {ref or 'not set'}")
        self.plan.eval.reference_api_key_env = name
        self._refs = {k: v for k, v in self._refs.items() if k[0] != ref}

    def key_env(self, spec: str) -> str | None:
        """The variable holding an endpoint's API key, as the plan names it for that endpoint:
        `eval.reference_api_key_env` for the reference, a candidate's own `api_key_env`."""
        if "://" not in spec:
            return None
        if spec == self.plan.eval.reference and self.plan.eval.reference_api_key_env:
            return self.plan.eval.reference_api_key_env
        return next((c.api_key_env for c in self.plan.candidates
                     if c.model == spec and c.api_key_env), None)

    def scenario_location(self) -> str:
        """The scenario as the loader reads it: a preset's name, else its file made absolute."""
        name = self.plan.scenario.name
        return name if name in preset_names() else self.resolve(name)

    @property
    def scenario(self):
        """The plan's Scenario (the preset or file with the plan's overrides), read once; it
        remembers its file (`Scenario.source`), against which its own `context_from` resolves."""
        section = self.plan.scenario.model_dump_json()  # a caller may edit the plan after loading
        if self._scenario is None or self._scenario[0] != section:
            self._scenario = (section, load_scenario(self.scenario_location(),
                                                     self.plan.scenario.overrides))
        return self._scenario[1]

    @property
    def output(self) -> Path:
        return Path(self.resolve(self.plan.output))

    @property
    def store_path(self) -> Path:
        return Path(self.resolve(self.plan.store)) if self.plan.store \
            else self.output / "results.sqlite"

    def eval_specs(self) -> list:
        """The plan's eval sets (DataSpec), paths resolved, each with its limit."""
        return [s.model_copy(update={"set": set_path(s.set, self.resolve)})
                for s in specs_of(self.plan.eval.data, self.plan.eval.limit)]

    def eval_data(self) -> str:
        """The eval set's file, for code that takes one set (see eval_specs for several)."""
        return self.eval_specs()[0].set

    def fidelity_text(self) -> str:
        if self.plan.fidelity.text == "bundled":
            return str(files("edgepick").joinpath("data/fidelity_text.txt"))
        return self.resolve(self.plan.fidelity.text)


def _node_line(root: yaml.Node | None, loc: tuple) -> int | None:
    """Line (1-based) of the deepest node along `loc` that exists in the YAML."""
    node, line = root, (root.start_mark.line + 1 if root is not None else None)
    for part in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == str(part):
                    nxt, line = v, k.start_mark.line + 1
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) \
                and part < len(node.value):
            nxt = node.value[part]
            line = nxt.start_mark.line + 1
        if nxt is None:
            break
        node = nxt
    return line


def _field(loc: tuple) -> str:
    out = ""
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (("." if out else "") + str(p))
    return out


def _once(errs: list) -> list:
    """A placement list's first value is checked twice, as the base runtime's and as the axis's:
    the axis's error names the item, so the base's is dropped."""
    listed = {e["loc"][1] for e in errs if e["loc"][:1] == ("runtime_axes",) and len(e["loc"]) > 1}
    return [e for e in errs if not (tuple(e["loc"][:2]) == ("runtime", "placement")
                                    and len(e["loc"]) > 2 and e["loc"][2] in listed)] or errs


DEFAULT = "default"


def load_plan(path: str | Path) -> LoadedPlan:
    """A plan file, or `default`: the packaged main job, with paths relative to the current
    directory."""
    base = None
    if str(path) == DEFAULT and not Path(path).exists():
        path, base = Path(str(files("edgepick").joinpath("data/default_plan.yaml"))), Path.cwd()
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "plan file not found")
    text = read_user_text(path)
    data = parse_yaml(text, path)
    root = yaml.compose(text)  # parsed once already, so this cannot fail; it gives line numbers
    if not isinstance(data, dict):
        raise InputError(path, "a plan must be a mapping (device, candidates, eval, scenario, ...)")
    try:
        plan = Plan.model_validate(data)
    except ValidationError as exc:
        errs = _once(exc.errors())
        loc = tuple(errs[0]["loc"])
        if loc[:1] == ("runtime_axes",):  # the lists are written under runtime
            loc = ("runtime", *loc[1:])
        flat = "placement" not in (data.get("runtime") or {})
        if loc[:2] == ("runtime", "placement") and flat:  # written beside the other settings
            loc = ("runtime", *loc[2:])
        _, msg = pydantic_problem(errs[0])
        more = f" (and {len(errs) - 1} more problem{'s' if len(errs) > 2 else ''})" \
            if len(errs) > 1 else ""
        raise InputError(path, msg + more, line=_node_line(root, loc), field=_field(loc)) from None
    lp = LoadedPlan(plan=plan, path=path, base=base or path.resolve().parent)

    check_plan(lp, lambda loc: _node_line(root, loc))
    return lp
