"""The report's device dimension: one candidate across devices side by side, a recommendation per
device, and the one configuration that serves the whole fleet when there is one (docs/scale.md;
seed 000 §3.4: the target device decides, so every device gets its own verdict).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from edgepick.backends import supports
from edgepick.backends.base import IN_PROCESS
from edgepick.markup import md_table
from edgepick.report.writer import LANGS
from edgepick.strings import say, texts
from edgepick.units import mib, pct

# the page's languages, one file each: English keeps the name it always had
FILES = {"en": "fleet.md", "zh": "fleet.zh.md"}


@dataclass
class DeviceOutcome:
    tag: str
    profile: object  # DeviceProfile
    summaries: list  # CandidateSummary
    decision: object  # Decision
    network: dict[str, dict] = field(default_factory=dict)  # candidate -> round-trip stats (ms)
    failures: list[str] = field(default_factory=list)  # "job: reason"
    report: Path | None = None
    deploy: Path | None = None  # this device's deploy.yaml (None: nothing to deploy)
    notes: list[str] = field(default_factory=list)  # what the decide stage said


def _fmt(v, t: dict, spec: str = ".0f", unit: str = "") -> str:
    return t["not_measured"] if v is None else f"{v:{spec}}{unit}"


def _remote(backend: str) -> bool:
    """Whether a network round trip is part of this engine's figures (it does not run here)."""
    return not supports(backend, IN_PROCESS)


def _verdict(outcome: DeviceOutcome, name: str, t: dict, lang: str) -> str:
    d = outcome.decision
    r = next((r for r in d.ranking if r.candidate == name), None)
    if r is None:
        return t["not_run"]
    if d.recommendation == name:
        lead = f"**{t['recommended'].format(status=say('report', d.status, lang))}**"
    elif r.eliminated:
        why = r.violations[0].text if r.violations else (r.reasons[0] if r.reasons else "")
        return t["eliminated_why"].format(why=why) if why else t["eliminated"]
    else:
        lead = t["survives"].format(status=say("report", r.status, lang))
    return t["with_score"].format(lead=lead, s=r.score) if r.score is not None else lead


def recommendation_text(o: DeviceOutcome, lang: str = "en") -> str:
    d = o.decision
    if not d.recommendation:
        return say("fleet_report", "no_recommendation", lang)
    return f"{d.recommendation} ({say('report', d.status, lang)})"


def fleet_choice(outcomes: list[DeviceOutcome], lang: str = "en") -> tuple[str | None, str]:
    """The candidate that survives on every device with the best worst-device score, and why
    (in `lang`)."""
    t = texts("fleet_report", lang)
    if not outcomes:
        return None, t["no_device"]
    worst: dict[str, float] = {}
    blocked: dict[str, list[str]] = {}
    names = [s.candidate for s in outcomes[0].summaries]
    for name in names:
        for o in outcomes:
            r = next((r for r in o.decision.ranking if r.candidate == name), None)
            if r is None or r.eliminated or r.score is None:
                blocked.setdefault(name, []).append(o.tag)
            else:
                worst[name] = min(worst.get(name, r.score), r.score)
    fit_all = {n: s for n, s in worst.items() if n not in blocked}
    if fit_all:
        best = max(fit_all, key=fit_all.get)
        return best, t["fleet_best"].format(best=best, n=len(outcomes), s=fit_all[best])
    if not names:
        return None, t["no_candidate"]
    recs = {(o.decision.recommendation, o.decision.status) for o in outcomes}
    if len(recs) == 1 and (rec := next(iter(recs)))[0]:
        return None, t["fleet_same"].format(rec=rec[0], status=say("report", rec[1], lang))
    near = min(names, key=lambda n: len(blocked.get(n, [])))
    return None, t["fleet_nearest"].format(near=near, where=", ".join(blocked.get(near, [])))


def _row(outcomes, name: str, label: str, get, t: dict, lang: str) -> list[str]:
    cells = []
    for o in outcomes:
        s = next((s for s in o.summaries if s.candidate == name), None)
        cells.append("—" if s is None else get(o, s, t, lang))
    return [name, t[label], *cells]


# (catalog key of the figure's label, its cell from (outcome, summary, texts, lang)); the
# labels are fleet_report's in strings.yaml
_METRICS = [
    ("ttft_p50", lambda o, s, t, lg: _fmt(s.ttft_p50_ms, t, ".0f", " ms")),
    ("decode", lambda o, s, t, lg: _fmt(s.decode_tps, t, ".1f", " tok/s")),
    ("peak_rss", lambda o, s, t, lg: mib(s.peak_rss_bytes, t["not_measured"])),
    ("unacceptable", lambda o, s, t, lg: pct(s.unacceptable_rate, t["not_measured"])),
    ("network_rtt", lambda o, s, t, lg: _fmt((o.network.get(s.candidate) or {}).get("median"),
                                             t, ".1f", " ms") if _remote(s.backend) else "—"),
    ("verdict", lambda o, s, t, lg: _verdict(o, s.candidate, t, lg)),
]


def fleet_markdown(outcomes: list[DeviceOutcome], scenario: str, lang: str = "en") -> str:
    t = texts("fleet_report", lang)
    choice, why = fleet_choice(outcomes, lang)
    tags = [o.tag for o in outcomes]
    lines = [f"# {t['title'].format(n=len(outcomes), scenario=scenario)}", "",
             f"## {t['one_config']}", "", why, "", f"## {t['per_device']}", ""]
    per_device = []
    for o in outcomes:
        p = o.profile
        src = t["measured"] if getattr(p, "measured", False) else t["spec_sheet"]
        per_device.append([o.tag, f"{p.model_budget_bytes / 2**30:.1f} GiB",
                           f"{p.bandwidth_gbps:.1f} GB/s ({src})", recommendation_text(o, lang),
                           o.report.as_posix() if o.report else "—"])
    lines += [md_table([t["device"], t["budget"], t["bandwidth"], t["recommendation"],
                        t["report"]], per_device)]
    names = list(dict.fromkeys(s.candidate for o in outcomes for s in o.summaries))
    lines += ["", f"## {t['across']}", "",
              md_table([t["candidate"], t["figure"], *tags],
                       [_row(outcomes, name, label, get, t, lang)
                        for name in names for label, get in _METRICS])]
    if any(o.network for o in outcomes):
        lines += ["", t["network_note"]]
    failures = [f"- {o.tag}: {f}" for o in outcomes for f in o.failures]
    if failures:
        lines += ["", f"## {t['failed']}", "", *failures]
    return "\n".join(lines) + "\n"


def write_fleet(outcomes: list[DeviceOutcome], scenario: str, out: Path,
                lang: str = "both") -> list[Path]:
    """The page in each of `lang`'s languages (the plan's report.lang), then fleet.json."""
    out.mkdir(parents=True, exist_ok=True)
    pages = []
    for lg in LANGS[lang]:
        pages.append(out / FILES[lg])
        pages[-1].write_text(fleet_markdown(outcomes, scenario, lg), encoding="utf-8")
    choice, why = fleet_choice(outcomes)
    data = {"scenario": scenario, "fleet_choice": choice, "why": why, "devices": [
        {"device": o.tag, "profile": o.profile.model_dump(mode="json"),
         "recommendation": o.decision.recommendation, "failures": o.failures,
         "network": o.network, "report": str(o.report) if o.report else None,
         "candidates": [s.model_dump(mode="json") for s in o.summaries],
         "decision": o.decision.model_dump(mode="json")} for o in outcomes]}
    js = out / "fleet.json"
    js.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return [*pages, js]
