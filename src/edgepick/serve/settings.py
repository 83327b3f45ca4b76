"""`edgepick serve` settings: one pydantic settings model fed by the command-line flags, the
`EDGEPICK_SERVE_*` environment variables and a YAML file (`--config`), in that order of
precedence (as llama-cpp-python's server does)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from edgepick.errors import EdgepickError, InputError, first_problem
from edgepick.units import parse_size
from edgepick.yaml_input import read_yaml_mapping


class ServeSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EDGEPICK_SERVE_", extra="forbid",
                                      populate_by_name=True)

    host: str = Field("127.0.0.1", description="address to listen on (loopback unless told)")
    port: int = Field(8080, ge=0, le=65535, description="port to listen on (0: a free one)")
    slots: int = Field(2, ge=1, le=64, description="requests decoded at once (llama-server -np)")
    queue: int = Field(8, ge=0, le=4096, description="requests that may wait for a slot; "
                                                     "beyond slots + queue: 429 at once")
    deadline: float = Field(120.0, gt=0, description="seconds a request may take, queue "
                                                     "wait plus generation (504 beyond)")
    api_key: str | None = Field(None, validation_alias=AliasChoices(
        "api_key", "EDGEPICK_SERVE_API_KEY", "EDGEPICK_API_KEY"),
        description="clients must send it as a Bearer token (env EDGEPICK_API_KEY)")
    max_body: int = Field(1 << 20, gt=0, description="largest request body accepted (413 "
                                                     "beyond), e.g. 1MiB")
    body_timeout: float = Field(10.0, gt=0, description="seconds a request body may take to "
                                "arrive (408 beyond: a Content-Length larger than the body)")
    header_timeout: float = Field(10.0, gt=0, description="seconds a connection has to send "
                                  "its request headers (then it is closed: slowloris)")
    cors_origin: list[str] = Field(default_factory=list, description="browser origin allowed "
                                   "to call this server (repeatable; '*' for any; none by "
                                   "default)")
    max_tokens: int = Field(1024, ge=1, description="largest max_tokens a request may ask for "
                                                    "(400 beyond; the default when absent)")
    max_prompt_tokens: int | None = Field(None, ge=1, description="largest prompt in tokens "
                                          "(400 beyond); default: context minus max_tokens, "
                                          "at least half the context")
    echo_max_prompt_tokens: int = Field(1024, ge=1, description="longest prompt an echo "
                                        "(prompt log-probabilities) request scores, in tokens")
    echo_max_tokens: int = Field(16, ge=0, description="longest greedy continuation an echo "
                                 "request may ask for")
    echo_queue: int = Field(4, ge=0, description="echo requests that may wait for the one "
                            "being scored (429 beyond)")
    echo_max_prompts: int = Field(8, ge=1, description="prompts one echo request may list "
                                  "(400 beyond)")
    max_prompts: int = Field(8, ge=1, description="prompts one completion request may list "
                             "(400 beyond): they run in turn within its deadline")
    mem_limit: int | None = Field(None, gt=0, description="engine RssAnon+VmSwap that "
                                  "triggers a drain and restart, e.g. 2GiB")
    mem_check: float = Field(0.1, gt=0, description="seconds between memory samples (a "
                             "300 MB/s leak moves 30 MB in 0.1 s)")
    restart_cooldown: float = Field(30.0, ge=0, description="least seconds between two "
                                    "memory restarts")
    drain_timeout: float = Field(30.0, ge=0, description="seconds in-flight requests get to "
                                 "finish before a restart (then: retriable 503)")
    # liveness (E): the engine must answer a cheap probe; env EDGEPICK_SERVE_PROBE_TIMEOUT, …
    probe_timeout: float = Field(5.0, gt=0, description="seconds the engine has to answer a "
                                 "health probe; beyond it serve reads not ready")
    hung_after: float = Field(30.0, gt=0, description="seconds without an answer to the probe "
                              "after which the engine is restarted (reason hung)")
    max_restarts: int = Field(3, ge=1, description="engine restarts (memory, hung, crash) "
                              "within --restart-window after which serve stops restarting "
                              "and reports itself degraded")
    restart_window: float = Field(600.0, gt=0, description="seconds over which --max-restarts "
                                  "is counted")
    # a team of models (several -m, or a team deploy.yaml): serve/pool/team.py and
    # serve/pool/residency.py
    memory_budget: int | None = Field(None, gt=0, description="bytes the team's resident "
                                      "models may need together, e.g. 600M (default: "
                                      "deploy.yaml's memory.budget_bytes, else none)")
    group_wait: float = Field(1.0, ge=0, description="seconds a request for a model that is "
                              "not loaded waits while the resident one still has work, so "
                              "one swap serves a batch")
    policy: Path | None = Field(None, description="YAML policy: resources:, swap:, route:")
    registry: Path | None = Field(None, description="model registry directory")
    signals: Path | None = Field(None, description="signals file (battery, AC, temperature, "
                                 "memory pressure) read instead of the OS")
    route_mode: str | None = Field(None, description="router mode: edge_first, cloud_first, "
                                   "by_task or cascade (over the policy's route.mode; "
                                   "docs/route.md)")
    cloud: str | None = Field(None, description="cloud for the router, an OpenAI-compatible "
                              "URL http://host:port/v1#model (key from $EDGEPICK_CLOUD_API_KEY)")
    sample_rate: float = Field(0.0, ge=0, le=1, description="share of requests whose output "
                               "is judged and, with --sample-out, written as eval JSONL")
    sample_out: Path | None = Field(None, description="eval JSONL file for sampled traffic")
    log_dir: Path | None = Field(None, description="where llama-server logs go")

    @field_validator("max_body", "mem_limit", "memory_budget", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return None if v is None else parse_size(v)

    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                   dotenv_settings, file_secret_settings):
        return (init_settings, env_settings, _YamlSource(settings_cls))

    @classmethod
    def load(cls, config: str | Path | None = None, **flags: Any) -> "ServeSettings":
        """Flags given (not None) override the environment, which overrides the file."""
        _YamlSource.path = Path(config) if config else None
        try:
            return cls(**{k: v for k, v in flags.items() if v is not None})
        except ValidationError as exc:
            field, problem = first_problem(exc)
            if config and field and field in (_YamlSource.keys or ()):
                raise InputError(config, problem, field=field) from None
            raise EdgepickError(f"serve setting '{field or ''}': {problem}") from None
        finally:
            _YamlSource.path = None


class _YamlSource(PydanticBaseSettingsSource):
    path: Path | None = None
    keys: tuple[str, ...] | None = None

    def get_field_value(self, field, field_name):  # pragma: no cover - __call__ is used
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        if self.path is None:
            return {}

        data = read_yaml_mapping(self.path, "expected a mapping of serve settings")
        data = {str(k).replace("-", "_"): v for k, v in data.items()}
        unknown = sorted(set(data) - set(ServeSettings.model_fields))
        if unknown:
            raise InputError(self.path, f"unknown setting(s) {', '.join(unknown)}; known: "
                                        f"{', '.join(ServeSettings.model_fields)}")
        type(self).keys = tuple(data)
        return data
