"""What doctor examines: a GGUF file, a deploy.yaml (its model, runtime, sampling, scenario and
budget) or the URL of a running `edgepick serve`, resolved once into one `Target`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import psutil
from pydantic import BaseModel, ConfigDict

from edgepick.devices.catalog import load_device
from edgepick.errors import EdgepickError
from edgepick.records.candidate import RuntimeSettings
from edgepick.records.deploy import DeployConfig
from edgepick.records.model_ref import DEFAULT_ENGINE


class Budget(BaseModel):
    """The memory the model may use, and where that figure comes from."""

    bytes: int
    source: str  # "--budget", "device raspberry-pi-5", "gate peak_memory", "free memory"


class Target(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    text: str  # as the user typed it
    kind: Literal["gguf", "deploy", "url"]
    model_path: str | None = None  # the GGUF the engine loads (None for a URL)
    url: str | None = None
    backend: str = DEFAULT_ENGINE
    settings: RuntimeSettings = RuntimeSettings()
    sampling: dict | None = None  # the deployed sampling; None: greedy
    sha256: str | None = None  # what deploy.yaml says the file must hash to
    deploy: DeployConfig | None = None
    device: str | None = None

    @property
    def label(self) -> str:
        return Path(self.model_path).name if self.model_path else (self.url or self.text)

    @property
    def context_p99(self) -> int | None:
        """The scenario's long context: deploy.yaml's prompt P99 (else P95) in tokens."""
        ct = (self.deploy.context_tokens or {}) if self.deploy else {}
        return ct.get("p99") or ct.get("p95")

    @property
    def output_p95(self) -> int | None:
        ot = (self.deploy.output_tokens or {}) if self.deploy else {}
        return ot.get("p95") or ot.get("p50")

    def budget(self, given: int | None = None) -> Budget:
        """The tightest of: --budget, the deploy device's model budget, a peak-memory gate's
        limit; the free memory of this host when none is given."""
        found: list[Budget] = []
        if given:
            found.append(Budget(bytes=given, source="--budget"))
        if self.device and self.device != "local":
            beside = Path(self.text).resolve().parent / self.device  # a profile next to it
            try:
                dev = load_device(str(beside) if self.kind == "deploy" and beside.is_file()
                                  else self.device)
                found.append(Budget(bytes=dev.model_budget_bytes, source=f"device {self.device}"))
            except EdgepickError:
                pass  # a device this host does not know: its budget is not ours to guess
        for g in (self.deploy.gates if self.deploy else []):
            if g.metric == "peak_memory" and g.limit:
                found.append(Budget(bytes=int(g.limit), source="gate peak_memory"))
        if not found:
            found.append(Budget(bytes=int(psutil.virtual_memory().available),
                                source="free memory"))
        return min(found, key=lambda b: b.bytes)


def resolve_target(text: str) -> Target:
    """One line naming what is wrong when `text` is none of the three."""
    if "://" in text:
        if not text.startswith(("http://", "https://")):
            raise EdgepickError(f"{text}: a URL must start with http:// or https://")
        return Target(text=text, kind="url", url=text.rstrip("/"), backend="openai_http")
    path = Path(text)
    if not path.exists():
        raise EdgepickError(f"{text}: no such file (give a GGUF, a deploy.yaml or a URL)")
    if path.suffix.lower() in (".yaml", ".yml"):
        cfg = DeployConfig.load(path)
        model = cfg.model.path
        if "://" in model:
            return Target(text=text, kind="deploy", url=model, backend=cfg.model.backend,
                          deploy=cfg, settings=cfg.runtime, device=cfg.device,
                          sampling=_sampling(cfg))
        mp = Path(model)
        if not mp.is_absolute():
            mp = path.resolve().parent / mp
        return Target(text=text, kind="deploy", model_path=str(mp), backend=cfg.model.backend,
                      settings=cfg.runtime, sampling=_sampling(cfg),
                      sha256=cfg.model.sha256 or None,
                      deploy=cfg, device=cfg.device)
    return Target(text=text, kind="gguf", model_path=str(path))


def _sampling(cfg: DeployConfig) -> dict | None:
    if cfg.sampling is None:
        return None
    s = {k: v for k, v in cfg.sampling.model_dump().items() if v is not None}
    return s or None
