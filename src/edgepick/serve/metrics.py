"""`/metrics`: what to watch once the model is live (seed 000 §5.3: P99 as the alert metric;
§7.4), as Prometheus histograms, counters and gauges. Names are listed in docs/serve.md."""

from __future__ import annotations

import logging
from typing import Callable

from collections import deque

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from edgepick.power.live import live_sources
from edgepick.serve.availability import AvailabilityCollector, EngineFate, ReadyClock

# seconds; dense below 1 s where TTFT and inter-token gaps live
LATENCY_BUCKETS = (0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0,
                   1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 20.0, 30.0, 60.0, 120.0)
ITL_BUCKETS = (0.001, 0.002, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15,
               0.2, 0.3, 0.5, 1.0, 2.0)
TPS_BUCKETS = (1, 2, 3, 5, 7.5, 10, 15, 20, 30, 40, 50, 75, 100, 150, 200, 300, 500, 1000)
# tokens; powers of two up to long contexts, for the length drift check (monitor/drift.py)
LENGTH_BUCKETS = tuple(2 ** k for k in range(3, 18))


class ServeMetrics:
    """One registry per server, so several servers in one process (tests) do not collide."""

    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.ttft = Histogram("edgepick_ttft_seconds", "Time to first token, admission included",
                              ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.itl = Histogram("edgepick_inter_token_seconds", "Gap between generated tokens",
                             ["route"], buckets=ITL_BUCKETS, registry=r)
        self.e2e = Histogram("edgepick_request_seconds", "End-to-end request latency",
                             ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.embedding_seconds = Histogram("edgepick_embedding_seconds",
                                           "End-to-end /v1/embeddings latency",
                                           buckets=LATENCY_BUCKETS, registry=r)
        self.embedding_inputs = Counter("edgepick_embedding_inputs", "Inputs embedded",
                                        registry=r)
        self.queue_wait = Histogram("edgepick_queue_wait_seconds", "Wait for an engine slot",
                                    buckets=LATENCY_BUCKETS, registry=r)
        self.decode_tps = Histogram("edgepick_decode_tokens_per_second",
                                    "Per-request decode speed (generated tokens after the first)",
                                    ["route"], buckets=TPS_BUCKETS, registry=r)
        self.requests = Counter("edgepick_requests", "Requests by endpoint and HTTP status",
                                ["endpoint", "status"], registry=r)
        self.rejections = Counter("edgepick_rejections", "Requests refused before running",
                                  ["reason"], registry=r)
        self.degraded = Counter("edgepick_degraded_requests",
                                "Requests run with a lower max_tokens by the resource policy",
                                registry=r)
        self.restarts = Counter("edgepick_engine_restarts", "Engine restarts by reason",
                                ["reason"], registry=r)
        self.swaps = Counter("edgepick_model_swaps", "Active model changes by cause",
                             ["cause", "to_version"], registry=r)
        self.policy_checks = Counter("edgepick_policy_checks", "Hot-swap policy evaluations",
                                     registry=r)
        self.tokens = Counter("edgepick_tokens", "Prompt and generated tokens", ["kind"], registry=r)
        self.routes = Counter("edgepick_routes", "Requests by route and reason", ["route", "reason"],
                              registry=r)
        self.sampled = Counter("edgepick_sampled_outputs",
                               "Sampled outputs by verdict (ok, unacceptable)", ["verdict"],
                               registry=r)
        self.sampled_format_errors = Counter("edgepick_sampled_format_errors",
                                             "Sampled outputs without the form asked for",
                                             registry=r)
        self.queue_depth = Gauge("edgepick_queue_depth", "Requests waiting for a slot", registry=r)
        self.busy_slots = Gauge("edgepick_busy_slots", "Slots running a request", registry=r)
        self.slots = Gauge("edgepick_slots", "Engine slots", registry=r)
        self.engine_memory = Gauge("edgepick_engine_memory_bytes",
                                   "Engine process tree RssAnon + VmSwap", registry=r)
        self.memory_limit = Gauge("edgepick_engine_memory_limit_bytes",
                                  "Watchdog threshold (0: none)", registry=r)
        self.active_model = Gauge("edgepick_active_model", "1 for the model version serving",
                                  ["name", "version"], registry=r)
        self.ready = _ReadyGauge("edgepick_ready", "1 when an engine is ready", registry=r)
        self.events: deque[tuple[float, str, str]] = deque(maxlen=20)  # the status page's list
        # the loop's figures (seed 000 §7.4): availability, exits/OOM, peak memory,
        # per-task sampled verdicts, user feedback, cloud references for sampled items
        self.ready_clock = self.ready.clock = ReadyClock()
        self.engine_fate = EngineFate()
        self.availability = AvailabilityCollector(self.ready_clock, self.engine_fate)
        r.register(self.availability)
        self.sampled_by_task = Counter("edgepick_sampled_task_outputs",
                                       "Sampled outputs by task and verdict (ok, unacceptable)",
                                       ["task", "verdict"], registry=r)
        self.sampled_task_format_errors = Counter("edgepick_sampled_task_format_errors",
                                                  "Sampled outputs without the form asked for, "
                                                  "by task", ["task"], registry=r)
        self.badcases = Counter("edgepick_badcases", "Sampled items marked badcases, by task and "
                                "by what marked them (judged: unacceptable; feedback: rated down)",
                                ["task", "source"], registry=r)
        self.prompt_tokens = Histogram("edgepick_prompt_tokens", "Prompt length per answer",
                                       buckets=LENGTH_BUCKETS, registry=r)
        self.completion_tokens = Histogram("edgepick_completion_tokens",
                                           "Generated length per answer", buckets=LENGTH_BUCKETS,
                                           registry=r)
        # speculative decoding, from each answer's engine `timings` (draft_n, draft_n_accepted)
        self.speculative = Counter("edgepick_speculative_tokens", "Draft tokens the engine "
                                   "proposed (drafted) and the model kept (accepted), by model "
                                   "(route) and task", ["model", "task", "kind"], registry=r)
        self.feedback = Counter("edgepick_feedback", "User feedback by rating (up, down)",
                                ["rating"], registry=r)
        self.references = Counter("edgepick_sample_references", "Cloud references for sampled "
                                  "items by outcome (answered, edge_only, rate_cap, cost_cap, "
                                  "failed, dropped)", ["outcome"], registry=r)

    def bind_power(self, sysfs_root: str = "/") -> None:
        """`edgepick_power_watts` and `edgepick_temperature_celsius{sensor}`, read at scrape
        time, registered only where the device has a power counter / temperature sensor."""
        if getattr(self, "_power_bound", False):
            return
        self._power_bound = True
        watts, temps, line = live_sources(sysfs_root)
        logging.getLogger("edgepick.serve").info("power: %s", line)  # one line either way
        if watts is not None:
            self.power = Gauge("edgepick_power_watts", "Device power from "
                               f"{watts.source.describe()}", registry=self.registry)
            self.power.set_function(watts)
        if temps:
            self.temperature = Gauge("edgepick_temperature_celsius", "Temperature by sensor",
                                     ["sensor"], registry=self.registry)
            for name, read in temps.items():
                self.temperature.labels(name).set_function(read)

    def bind_pool(self, queue_depth: Callable[[], float], busy: Callable[[], float],
                  memory: Callable[[], float]) -> None:
        # read at scrape time, so the gauges are never stale
        self.queue_depth.set_function(queue_depth)
        self.busy_slots.set_function(busy)
        self.engine_memory.set_function(memory)
        self.availability.memory = memory
        self.bind_power()

    def set_active(self, name: str, version: str) -> None:
        self.active_model.clear()
        self.active_model.labels(name, version).set(1)


class _ReadyGauge(Gauge):
    """edgepick_ready, also timing how long it was 1 (availability, serve/availability.py)."""

    clock: ReadyClock | None = None

    def set(self, value: float) -> None:
        super().set(value)
        if self.clock is not None:
            self.clock.mark(bool(value))
