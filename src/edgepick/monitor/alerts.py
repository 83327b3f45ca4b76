"""Prometheus alerting rules from a deploy.yaml's gates, for an operator's own
Prometheus and Alertmanager: TTFT P50/P99 and decode speed P5 through `histogram_quantile` over
`rate(...[window])`, engine memory, the sampled unacceptable and format-error rates (only once
enough outputs were sampled in the window to say anything), 5xx and rejection rates, an engine
that is not ready, and OOM kills. A gate without a limit falls back to the decision's baseline
figure times the monitor's tolerance; a figure with neither has no rule (said in the header).

Checked with the real `promtool check rules` in the tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from edgepick.monitor.live import LATENCY_TOLERANCE
from edgepick.records.deploy import DeployConfig
from edgepick.units import pct

UNACCEPTABLE = 'edgepick_sampled_outputs_total{verdict="unacceptable"}'
SERVER_ERRORS = 'edgepick_requests_total{status=~"5.."}'


@dataclass
class AlertSettings:
    window: str = "5m"  # rate() range of the latency and error rules
    quality_window: str = "30m"  # sampled outputs are few: a longer range for their rates
    hold: str = "5m"  # `for:` of every rule but the instant ones
    min_sampled: int = 20  # fewer sampled outputs in the quality window say nothing
    max_error_rate: float = 0.01
    max_rejection_rate: float = 0.05
    severity: str = "warning"
    skipped: list[str] = field(default_factory=list)


def _q(q: float, metric: str, window: str) -> str:
    return f"histogram_quantile({q}, sum by (le) (rate({metric}_bucket[{window}])))"


def _ratio(num: str, den: str, window: str) -> str:
    return f"sum(rate({num}[{window}])) / sum(rate({den}[{window}]))"


def _limit(deploy: DeployConfig, metric: str) -> tuple[float | None, str]:
    for g in deploy.gates:
        if g.metric == metric and g.limit is not None:
            return g.limit, "the deploy's gate"
    return None, ""


def _name(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", model)


def rules(deploy: DeployConfig, st: AlertSettings | None = None) -> dict:
    st = st or AlertSettings()
    b = deploy.baseline
    w, qw, n = st.window, st.quality_window, st.min_sampled
    out: list[dict] = []

    def add(alert: str, expr: str, summary: str, hold: str | None = None, **labels: str) -> None:
        rule = {"alert": alert, "expr": expr, "for": hold or st.hold,
                "labels": {"severity": st.severity, "model": deploy.model.name, **labels},
                "annotations": {"summary": summary,
                                "description": summary + " (from " + (deploy.run_id and
                                                                      f"run {deploy.run_id}" or
                                                                      "the deploy") + ")"}}
        if rule["for"] == "0s":
            rule.pop("for")
        out.append(rule)

    def bound(metric: str, base: float | None, scale: float) -> tuple[float | None, str]:
        lim, src = _limit(deploy, metric)
        if lim is None and base:
            lim, src = base * scale, f"the decision's baseline × {LATENCY_TOLERANCE:g}"
        return lim, src

    for q, metric, base in ((0.99, "ttft_p99_ms", b.ttft_p99_ms), (0.5, "ttft_p50_ms", b.ttft_p50_ms)):
        lim, src = bound(metric, base, LATENCY_TOLERANCE)
        centile = int(q * 100)
        if lim is None:
            st.skipped.append(f"TTFT P{centile}: no gate limit and no baseline")
            continue
        add(f"EdgepickTTFTP{centile}High", f"{_q(q, 'edgepick_ttft_seconds', w)} > {lim / 1000:g}",
            f"TTFT P{centile} over {w} above {lim:.0f} ms ({src})")
    lim, src = _limit(deploy, "decode_tps")
    if lim is None and b.decode_tps:
        lim, src = b.decode_tps / LATENCY_TOLERANCE, \
            f"the decision's baseline / {LATENCY_TOLERANCE:g}"
    if lim is not None:
        add("EdgepickDecodeP5Low",
            f"{_q(0.05, 'edgepick_decode_tokens_per_second', w)} < {lim:g}",
            f"decode speed P5 over {w} below {lim:.1f} tok/s ({src})")
    else:
        st.skipped.append("decode P5: no gate limit and no baseline")
    lim, src = _limit(deploy, "peak_memory")
    if lim is None and b.peak_memory_bytes:
        lim, src = b.peak_memory_bytes * LATENCY_TOLERANCE, \
            f"the decision's peak × {LATENCY_TOLERANCE:g}"
    if lim is not None:
        add("EdgepickEngineMemoryHigh", f"max_over_time(edgepick_engine_memory_bytes[{w}]) > "
            f"{lim:.0f}", f"engine memory above {lim / 2**20:.0f} MiB ({src})", hold="0s")
    else:
        st.skipped.append("memory: no gate limit and no baseline")
    enough = f"sum(increase(edgepick_sampled_outputs_total[{qw}])) >= {n}"
    lim, src = _limit(deploy, "unacceptable_rate")
    if lim is None and b.unacceptable_rate is not None:
        lim, src = b.unacceptable_rate, "the decision's measured rate"
    if lim is not None:
        add("EdgepickSampledUnacceptableHigh",
            f"({_ratio(UNACCEPTABLE, 'edgepick_sampled_outputs_total', qw)} > {lim:g}) "
            f"and on() ({enough})",
            f"sampled unacceptable rate over {qw} above {pct(lim)} ({src}); the traffic may "
            "have drifted from the evaluation set", hold="0s")
    else:
        st.skipped.append("unacceptable rate: no gate limit and no baseline")
    lim, src = _limit(deploy, "format_compliance")
    top = 1 - lim if lim is not None else b.format_error_rate
    if lim is None and top is not None:
        src = "the decision's measured rate"
    if top is not None:
        add("EdgepickSampledFormatErrorsHigh",
            f"({_ratio('edgepick_sampled_format_errors_total', 'edgepick_sampled_outputs_total', qw)}"
            f" > {top:g}) and on() ({enough})",
            f"sampled format-error rate over {qw} above {pct(top)} ({src})", hold="0s")
    add("EdgepickErrorRateHigh",
        f"{_ratio(SERVER_ERRORS, 'edgepick_requests_total', w)} > {st.max_error_rate:g}", f"5xx answers over {w} above {pct(st.max_error_rate)}")
    add("EdgepickRejectionRateHigh",
        f"{_ratio('edgepick_rejections_total', 'edgepick_requests_total', w)}"
        f" > {st.max_rejection_rate:g}",
        f"requests refused (429, resources) over {w} above {pct(st.max_rejection_rate)}")
    add("EdgepickNotReady", "edgepick_ready == 0", "no engine ready: /health answers 503",
        hold="1m")
    add("EdgepickEngineOOMKilled", "increase(edgepick_engine_oom_kills_total[1h]) > 0",
        "the engine was killed by SIGKILL (OOM) in the last hour", hold="0s")
    return {"groups": [{"name": f"edgepick-{_name(deploy.model.name)}", "rules": out}]}


def rules_yaml(deploy: DeployConfig, st: AlertSettings | None = None) -> str:
    st = st or AlertSettings()
    doc = rules(deploy, st)
    head = [f"# Prometheus alerting rules for {deploy.model.name} from its deploy.yaml gates "
            "(edgepick alerts).", "# Check: promtool check rules THIS_FILE"]
    head += [f"# no rule: {s}" for s in st.skipped]
    return "\n".join(head) + "\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True,
                                                   width=1000)
