"""Sentences of the decision in English and Chinese, rendered from structured facts so that the
report can state the same explanation in either language."""

from __future__ import annotations

from edgepick.records.decision import Violation

# constraint or metric key -> (English, Chinese)
LABELS: dict[str, tuple[str, str]] = {
    "ttft_p50_ms_max": ("TTFT P50", "首token延迟P50"),
    "ttft_p99_ms_max": ("TTFT P99", "首token延迟P99"),
    "decode_tps_min": ("decode speed", "生成速度"),
    "peak_memory_max": ("peak memory", "峰值内存"),
    "unacceptable_rate_max": ("unacceptable-output rate", "不可接受输出率"),
    "decay_max": ("sustained decay", "持续推理衰减"),
    "format_compliance_min": ("format compliance", "格式合规率"),
    "quality_min": ("task accuracy", "任务准确率"),
    "strict_format_min": ("strict format rate", "严格格式率"),
    "extra_badcases_per_1000_max": ("extra badcases per 1000", "每1000次请求多出的badcase"),
    "tool_choice_accuracy_min": ("tool-choice accuracy", "工具选择准确率"),
    "tool_schema_valid_min": ("schema-valid tool calls", "符合 schema 的工具调用率"),
    "accuracy": ("task accuracy", "任务准确率"),
    "format_compliance": ("format compliance", "格式合规率"),
    "acceptable": ("acceptable-output rate", "可接受输出率"),
    "fidelity": ("fidelity exp(-mean KLD)", "保真度 exp(-平均KLD)"),
    "decode_tps": ("decode speed", "生成速度"),
    "ttft_p50_ms": ("TTFT P50", "首token延迟P50"),
    "peak_memory": ("peak memory", "峰值内存"),
    "prefill_tps": ("prefill speed", "预填充速度"),
    "sustained": ("sustained speed kept (1 - decay)", "持续速度保持率（1-衰减）"),
    "length_growth": ("TTFT growth with prompt length", "首token延迟随输入长度的增长"),
    "tail": ("TTFT P99/P50", "首token延迟P99/P50"),
    "quality": ("quality", "任务质量"), "efficiency": ("efficiency", "效率"),
    "robustness": ("robustness", "鲁棒性"), "engineering": ("engineering", "工程成本"),
}

T: dict[str, tuple[str, str]] = {
    "nm": ("not measured", "未测量"),
    "vs": ("vs", "对"),
    "limit": ("limit", "限值"),
    "failed": ("failed to run: {d}", "运行失败：{d}"),
    "skipped": ("not measured: {d}", "未测量：{d}"),
    "nothing": ("nothing measured: no bench, eval or fidelity result stored for it",
                "没有任何测量：没有存储它的bench、eval或fidelity结果"),
    "nofit": ("predicted not to fit{d} (not measured)", "预测放不下{d}（未测量）"),
    "unchecked": ("{m} not measured: {c} unchecked", "{m}未测量：约束 {c} 未检查"),
    "nobudget": ("peak memory: no device budget given: peak_memory_max unchecked",
                 "峰值内存：未给出设备预算，约束 peak_memory_max 未检查"),
    "scored0": ("{m} not measured (scored 0)", "{m}未测量（按0分计）"),
    "none": ("no candidate meets every hard constraint of '{sc}'",
             "没有候选满足场景“{sc}”的全部硬约束"),
    "closest": ("nearest to passing: {c}, which breaks {n} constraint(s): {r}",
                "最接近达标的是 {c}，违反 {n} 条约束：{r}"),
    "binding": ("every candidate breaks {m} (limit {l}; best {c} at {v}): {adv}",
                "所有候选都违反{m}（限值 {l}；最好的 {c} 为 {v}）：{adv}"),
    "only": ("{w} is the only candidate that meets every hard constraint of '{sc}' "
             "(score {s}; weights {wt})",
             "{w} 是唯一满足场景“{sc}”全部硬约束的候选（得分 {s}；权重 {wt}）"),
    "beats": ("{w} scores {s} against {r} {rs} for '{sc}' (weights {wt})",
              "在场景“{sc}”下 {w} 得分 {s}，{r} 得分 {rs}（权重 {wt}）"),
    "layer": ("{layer} {a} vs {b} (weight {wt}): {facts}", "{layer} {a} 对 {b}（权重 {wt}）：{facts}"),
    "elim": ("{c} eliminated: {r}", "{c} 被淘汰：{r}"),
    "q_facts": ("accuracy {a} vs {b}, format compliance {c} vs {d}",
                "准确率 {a} 对 {b}，格式合规率 {c} 对 {d}"),
    "e_facts": ("decode {a} vs {b}, TTFT P50 {c} vs {d}, peak memory {e} vs {f}",
                "生成速度 {a} 对 {b}，首token延迟P50 {c} 对 {d}，峰值内存 {e} 对 {f}"),
    "r_facts": ("sustained decay {a} vs {b}", "持续推理衰减 {a} 对 {b}"),
    "g_facts": ("backend {a} vs {b}, quant {c} vs {d}", "后端 {a} 对 {b}，量化 {c} 对 {d}"),
    "task_cost": ("{t}: badcases {a} vs {b} per 1000 requests (counted per item) — {n} more for "
                  "{w}", "{t}：每1000次请求badcase {a} 对 {b}（逐条计数）—— {w} 多 {n} 个"),
    "no_cost": ("none measured: {w} is at least as good as {r} on every layer",
                "没有测到代价：{w} 在每一层都不差于 {r}"),
    "gap": ("{t}: {n} extra badcases per 1000 requests against the reference{ci}, counted item "
            "by item — {adv}", "{t}：相对参考模型每1000次请求多出 {n} 个badcase{ci}（逐条计数）—— {adv}"),
    "ci": (" (95% CI {lo}..{hi})", "（95%置信区间 {lo}..{hi}）"),
    "proven": ("proven: every hard constraint of '{sc}' passes with its whole 95% interval",
               "已证实：场景“{sc}”的每条硬约束在整个95%置信区间内都满足"),
    "provisional": ("provisional: no hard constraint fails, but {u}",
                    "暂定：没有硬约束被违反，但 {u}"),
    "undetermined": ("{m} {v} against the limit {l} is undetermined{n}",
                     "{m} {v} 相对限值 {l} 尚无定论{n}"),
    "settle": (" (about {k} more items would most likely settle it)",
               "（再增加约 {k} 条评测数据很可能可以定论）"),
    "nosettle": (" (the observed value sits on the limit: more items will not settle it)",
                 "（观测值正好落在限值上：增加数据也难以定论）"),
    "unmeasured": ("{m} was not measured", "{m} 未测量"),
    "hybrid": ("no single candidate clears every task type of '{sc}': hybrid plan — {c} on the "
               "edge for {e}; the reference {r} (cloud) for {k}; {p} of requests go to the cloud "
               "under the {mix}; expected badcases {b} per 1000 requests{ci}",
               "没有单个候选在场景“{sc}”的每类任务上都达标：混合方案 —— 端侧用 {c} 处理 {e}；"
               "参考模型 {r}（云端）处理 {k}；按{mix}，{p} 的请求走云端；预计每1000次请求 {b} 个badcase{ci}"),
    "edge_open": ("the edge side is provisional: {u}", "端侧部分暂定：{u}"),
    "route": ("{t} → {r}: {b} badcases per 1000{ci}, {s} of requests",
              "{t} → {r}：每1000次 {b} 个badcase{ci}，占请求 {s}"),
    "task_fail": ("{t} goes to the cloud: {why}", "{t} 走云端：{why}"),
    "format": ("format compliance {v}: validate every structured output and repair or retry; the "
               "edge has no cloud post-processing (seed 000 §3.2)",
               "格式合规率 {v}：校验每个结构化输出并修复或重试；端侧没有云端的后处理纠错（seed 000 §3.2）"),
    "unacc": ("unacceptable-output rate {v} is close to the {l} limit (seed 004 §2.3)",
              "不可接受输出率 {v} 接近 {l} 的限值（seed 004 §2.3）"),
    "decay": ("sustained decay {v} approaches the {l} limit: re-run the sustained test for ≥10 "
              "minutes on the device (seed 000 §2.4)",
              "持续推理衰减 {v} 接近 {l} 的限值：在设备上重新做 ≥10 分钟的持续测试（seed 000 §2.4）"),
    "mem": ("peak memory {v} uses {p} of the {l} limit: longer contexts grow the KV cache "
            "(seed 000 §2.1)", "峰值内存 {v} 占限值 {l} 的 {p}：更长的上下文会让KV Cache继续增长（seed 000 §2.1）"),
    "p99": ("TTFT P99 {v} is near the {l} limit: alert on P99, check background load before "
            "inference (seed 000 §5.2)",
            "首token延迟P99 {v} 接近 {l} 的限值：以P99告警，推理前检查后台负载（seed 000 §5.2）"),
    "measure": ("{u} — measure it before shipping", "{u} —— 上线前请补测"),
}

# seed 000 §3.3 table: what a gap means per task type and the fallback the seed recommends.
ADVICE: dict[str, tuple[str, str]] = {
    "classification": ("barely noticeable to users; keep an eye on the label distribution",
                       "用户几乎无感；关注标签分布即可"),
    "extraction": ("add a JSON repair fallback or route extraction to the cloud",
                   "加 JSON 修复兜底，或把抽取任务路由到云端"),
    "qa": ("knowledge-heavy QA invents answers on small models; route it to the cloud (§6.2)",
           "知识密集型问答在小模型上容易胡编；路由到云端（§6.2）"),
    "summary": ("spot-check summaries; fall back to the cloud for long inputs",
                "抽查摘要；长输入回退到云端"),
    "generation": ("acceptable for drafts; review before sending", "适合草稿；发送前需复核"),
    "code": ("use it for completion rather than generation", "用于补全而不是生成"),
    "math": ("do not let the edge model solve it alone; route math to the cloud",
             "不要让端侧模型独立完成；数学推理路由到云端"),
    "multi_turn": ("limit the number of turns kept in context", "控制保留在上下文中的轮次"),
}
# What would have to change when every candidate breaks the same hard constraint.
_SMALLER_FOOTPRINT = ("a lower-bit quant, a shorter context or a quantized KV cache (seed 000 §2.1)",
                      "更低比特的量化、更短的上下文或量化的KV Cache（seed 000 §2.1）")
CONSTRAINT_ADVICE: dict[str, tuple[str, str]] = {
    "unacceptable_rate_max": ("a larger or better instruction-tuned model, stricter prompts, or a "
                              "validator that routes failing outputs to the cloud (seed 004 §2.3)",
                              "更大或指令微调更好的模型、更严格的提示词，或用校验器把不合格输出路由到云端（seed 004 §2.3）"),
    "ttft_p50_ms_max": ("shorter prompts, a smaller model or a faster device (seed 000 §2.2)",
                        "更短的输入、更小的模型或更快的设备（seed 000 §2.2）"),
    "ttft_p99_ms_max": ("shorter prompts, less background load, a smaller model (seed 000 §5.2)",
                        "更短的输入、更少的后台负载、更小的模型（seed 000 §5.2）"),
    "decode_tps_min": ("a lower-bit quant, a smaller model or more memory bandwidth (seed 003 §2.2)",
                       "更低比特的量化、更小的模型或更高的内存带宽（seed 003 §2.2）"),
    "peak_memory_max": _SMALLER_FOOTPRINT,
    "fit": _SMALLER_FOOTPRINT,
    "decay_max": ("shorter sessions, better cooling or fewer threads (seed 000 §2.4)",
                  "更短的会话、更好的散热或更少的线程（seed 000 §2.4）"),
    "format_compliance_min": ("constrained decoding (a grammar) or a JSON repair fallback "
                              "(seed 000 §3.2)", "约束解码（语法）或 JSON 修复兜底（seed 000 §3.2）"),
    "quality_min": ("a larger model or a higher-precision quant (seed 004 §3.2)",
                    "更大的模型或更高精度的量化（seed 004 §3.2）"),
    "tool_choice_accuracy_min": ("fewer tools per request, clearer tool descriptions, or a model "
                                 "trained for tool calls (seed 004 §4.1)",
                                 "每次请求提供更少的工具、更清楚的工具描述，或选用为工具调用训练过的模型"
                                 "（seed 004 §4.1）"),
    "tool_schema_valid_min": ("the agent guard's repairs and retries, or constrained decoding "
                              "(seed 004 §6.4)", "Agent 守卫的修复与重试，或约束解码（seed 004 §6.4）"),
}
DEFAULT_ADVICE = ("add a fallback for this task (a validator, a retry, or the cloud)",
                  "为该任务加兜底（校验、重试或云端）")


def _i(lang: str) -> int:
    return 1 if lang == "zh" else 0


def t(key: str, lang: str = "en", **kw: object) -> str:
    return T[key][_i(lang)].format(**kw)


def label(key: str, lang: str = "en") -> str:
    pair = LABELS.get(key)
    return pair[_i(lang)] if pair else key


def advice(task: str, lang: str = "en") -> str:
    return ADVICE.get(task, DEFAULT_ADVICE)[_i(lang)]


def constraint_advice(constraint: str, lang: str = "en") -> str:
    return CONSTRAINT_ADVICE.get(constraint, DEFAULT_ADVICE)[_i(lang)]


def violation_text(v: Violation, lang: str = "en") -> str:
    if v.constraint == "runs":
        return t("failed", lang, d=v.detail)
    if v.constraint == "skipped":
        return t("skipped", lang, d=v.detail)
    if v.constraint == "measured":
        return t("nothing", lang)
    if v.constraint == "fit":
        d = f": {v.value_text} > {v.limit_text}" if v.value_text and v.limit_text else ""
        return t("nofit", lang, d=d)
    return f"{label(v.constraint, lang)} {v.value_text} {v.op} {t('limit', lang)} {v.limit_text}"


def unchecked_text(constraint: str, lang: str = "en") -> str:
    if constraint == "peak_memory_budget":
        return t("nobudget", lang)
    return t("unchecked", lang, m=label(constraint, lang), c=constraint)


def gate_phrase(g, lang: str) -> str:
    """An undetermined or unmeasured gate in a sentence, with the items that would settle it."""
    from edgepick.decide.gates import CONSTRAINT_OF, gate_text
    from edgepick.records.deploy import Gate

    m = label(CONSTRAINT_OF.get(g.metric, g.metric), lang)
    if g.verdict == "unmeasured":
        return t("unmeasured", lang, m=m)
    n = t("settle", lang, k=g.items_to_settle) if g.items_to_settle else t("nosettle", lang)
    limit = gate_text(Gate(metric=g.metric, value=g.limit))
    return t("undetermined", lang, m=m, v=gate_text(g), l=limit, n=n)


def reasons_text(ranked, lang: str = "en") -> list[str]:
    """A ranked candidate's reasons: violations, or notes on what is undetermined or was not
    measured."""
    if ranked.violations:
        return [violation_text(v, lang) for v in ranked.violations]
    return [gate_phrase(g, lang) for g in ranked.gates if g.verdict == "undetermined"] + \
        [t("scored0", lang, m=label(m, lang)) for m in ranked.missing] + \
        [unchecked_text(c, lang) for c in ranked.unchecked]
