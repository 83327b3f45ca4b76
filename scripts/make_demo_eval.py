"""Writes src/edgepick/data/demo_eval.jsonl: the bundled demo eval set (text written for edgepick).

Run: .venv/bin/python scripts/make_demo_eval.py. Hand-written items (labels, yes/no, QA,
summaries) carry their answers inline; arithmetic and extraction references are computed from
the same values that fill the prompt, so they are right by construction. Items are interleaved
across task groups, and across difficulties inside a group, so that `--limit N` still covers
every task type and difficulty.
"""

from __future__ import annotations

import json
import sys
from itertools import zip_longest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from demo_eval_text import (EXTRACT_EN, EXTRACT_ZH, INTENT_EN, INTENT_ZH, QA_EN, QA_ZH,  # noqa: E402
                            SENTIMENT_EN, SENTIMENT_ZH, SUMMARY_EN, SUMMARY_ZH, YESNO_EN, YESNO_ZH)

OUT = Path(__file__).resolve().parent.parent / "src" / "edgepick" / "data" / "demo_eval.jsonl"
DIFF = {"e": "easy", "m": "medium", "h": "hard"}


def sys_user(system: str, user: str) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def labels_items(prefix, rows, labels, system, user_prefix, lang, tag, critical_label=None):
    out = []
    for i, (d, text, label) in enumerate(rows, 1):
        assert label in labels, (text, label)
        out.append({"id": f"{prefix}-{i:02d}", "task": "classification",
                    "messages": sys_user(system, f"{user_prefix}{text}"), "reference": label,
                    "labels": labels, "difficulty": DIFF[d], "tags": [lang, tag],
                    "critical": label == critical_label})
    return out


def yes_no_items(prefix, rows, instruction, q, lang):
    return [{"id": f"{prefix}-{i:02d}", "task": "yes_no", "prompt": f"{instruction}\n{q}{text}",
             "reference": ans, "difficulty": DIFF[d], "tags": [lang, "reasoning" if d == "h" else "fact"]}
            for i, (d, text, ans) in enumerate(rows, 1)]


def qa_items(prefix, rows, instruction, q, lang):
    return [{"id": f"{prefix}-{i:02d}", "task": "qa", "prompt": f"{instruction}\n{q}{text}",
             "reference": ans, "difficulty": DIFF[d], "tags": [lang, "factual"]}
            for i, (d, text, ans) in enumerate(rows, 1)]


def summary_items(prefix, rows, instruction, t, lang):
    return [{"id": f"{prefix}-{i:02d}", "task": "summary", "prompt": f"{instruction}\n{t}{text}",
             "reference": ref, "difficulty": DIFF[d], "tags": [lang, "news"]}
            for i, (d, text, ref) in enumerate(rows, 1)]


def math_items() -> list[dict]:
    en_sys = "Solve the problem. Output only the final number, nothing else."
    zh_sys = "计算下面的题目。只输出最后的数字，不要输出其他内容。"
    en, zh = [], []
    # (difficulty, English text, Chinese text, answer, critical); answers computed here.
    pairs = [(23, 45), (67, 12), (38, 41), (54, 29), (16, 73)]
    for a, b in pairs:
        en.append(("e", f"What is {a} + {b}?", a + b, False))
        zh.append(("e", f"{a} 加 {b} 等于多少？", a + b, False))
    for a, b in [(91, 37), (80, 26), (63, 48)]:
        en.append(("e", f"What is {a} - {b}?", a - b, False))
        zh.append(("e", f"{a} 减 {b} 等于多少？", a - b, False))
    for a, b in [(7, 8), (12, 6), (9, 14), (25, 4)]:
        en.append(("m", f"What is {a} × {b}?", a * b, False))
        zh.append(("m", f"{a} 乘以 {b} 等于多少？", a * b, False))
    for a, b, c in [(3, 4, 5), (10, 6, 2), (8, 2, 7)]:
        en.append(("m", f"What is ({a} + {b}) × {c}?", (a + b) * c, False))
        zh.append(("m", f"（{a} + {b}）× {c} 等于多少？", (a + b) * c, False))
    for price, n, paid in [(4, 6, 50), (12, 3, 100), (7, 5, 40)]:
        en.append(("h", f"A notebook costs {price} yuan. Li buys {n} notebooks and pays with "
                        f"{paid} yuan. How much change, in yuan, does she get?", paid - price * n, True))
        zh.append(("h", f"一个笔记本 {price} 元，小李买了 {n} 个，付了 {paid} 元，应找回多少元？",
                   paid - price * n, True))
    for total, people in [(90, 4), (75, 6)]:
        en.append(("h", f"{total} yuan is shared equally by {people} friends. How many yuan does "
                        f"each friend pay?", total / people, True))
        zh.append(("h", f"{people} 个朋友平分 {total} 元，每人付多少元？", total / people, True))
    items = []
    for lang, rows, system in (("en", en, en_sys), ("zh", zh, zh_sys)):
        for i, (d, text, ans, crit) in enumerate(rows, 1):
            ans = int(ans) if float(ans).is_integer() else ans
            items.append({"id": f"math-{lang}-{i:02d}", "task": "math",
                          "messages": sys_user(system, text), "reference": ans,
                          "difficulty": DIFF[d], "tags": [lang, "arithmetic"], "critical": crit})
    return items


def extraction_items(prefix, rows, lang) -> list[dict]:
    items = []
    for i, (d, kind, values, text) in enumerate(rows, 1):
        keys = KINDS[kind]
        schema = {"type": "object", "additionalProperties": False, "required": list(keys),
                  "properties": {k: {"type": t} for k, t in keys.items()}}
        type_names = {"string": ("string", "字符串"), "integer": ("integer", "整数"),
                      "number": ("number", "数字")}
        if lang == "en":
            spec = ", ".join(f"{k} ({type_names[t][0]})" for k, t in keys.items())
            system = (f"Extract the fields from the text. Output only one JSON object with exactly "
                      f"these keys: {spec}. No other text.")
            user = f"Text: {text}"
        else:
            spec = "、".join(f"{k}（{type_names[t][1]}）" for k, t in keys.items())
            system = f"从文本中抽取字段。只输出一个 JSON 对象，只包含这些键：{spec}。不要输出其他内容。"
            user = f"文本：{text}"
        reference = dict(zip(keys, values))
        for k, v in reference.items():  # the value must appear in the text as written
            assert str(v) in text, (text, k, v)
        items.append({"id": f"{prefix}-{i:02d}", "task": "extraction",
                      "messages": sys_user(system, user), "reference": reference, "schema": schema,
                      "difficulty": DIFF[d], "tags": [lang, kind], "critical": kind == "invoice"})
    return items


KINDS = {
    "person": {"name": "string", "city": "string", "age": "integer"},
    "order": {"customer": "string", "product_code": "string", "quantity": "integer"},
    "invoice": {"company": "string", "amount": "number", "phone": "string"},
}


def build() -> list[dict]:
    groups = [
        labels_items("sent-en", SENTIMENT_EN, ["positive", "negative", "neutral"],
                     "Classify the sentiment of the text. Output exactly one of these labels: "
                     "positive, negative, neutral. Output only the label.", "Text: ", "en", "sentiment"),
        labels_items("sent-zh", SENTIMENT_ZH, ["正面", "负面", "中性"],
                     "判断文本的情感。输出以下标签之一：正面、负面、中性。只输出标签，不要输出其他内容。",
                     "文本：", "zh", "sentiment"),
        labels_items("intent-en", INTENT_EN, ["query", "order", "cancel", "other"],
                     "Classify the user's intent. Output exactly one of these labels: query, order, "
                     "cancel, other. Output only the label.", "User: ", "en", "intent", "cancel"),
        labels_items("intent-zh", INTENT_ZH, ["查询", "下单", "取消", "其他"],
                     "判断用户的意图。输出以下标签之一：查询、下单、取消、其他。只输出标签，不要输出其他内容。",
                     "用户：", "zh", "intent", "取消"),
        yes_no_items("yn-en", YESNO_EN, "Answer the question with yes or no only.", "Question: ", "en"),
        yes_no_items("yn-zh", YESNO_ZH, "只用“是”或“否”回答问题。", "问题：", "zh"),
        qa_items("qa-en", QA_EN, "Answer the question with a short phrase only.", "Question: ", "en"),
        qa_items("qa-zh", QA_ZH, "用简短的词语回答问题，只输出答案。", "问题：", "zh"),
        math_items(),
        extraction_items("ext-en", EXTRACT_EN, "en"),
        extraction_items("ext-zh", EXTRACT_ZH, "zh"),
        summary_items("sum-en", SUMMARY_EN, "Summarize the text in one short sentence.", "Text: ", "en"),
        summary_items("sum-zh", SUMMARY_ZH, "用一句话概括下面的文字。", "文字：", "zh"),
    ]
    return interleave([interleave([[it for it in g if it["difficulty"] == d] for d in DIFF.values()])
                       for g in groups])


def interleave(lists: list[list]) -> list:
    """Round-robin, so any prefix mixes every list (task groups; difficulties inside a group)."""
    return [x for row in zip_longest(*lists) for x in row if x is not None]


def main() -> None:
    items = build()
    ids = [it["id"] for it in items]
    assert len(ids) == len(set(ids))
    with open(OUT, "w", encoding="utf-8") as fh:
        for it in items:
            fh.write(json.dumps(it, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(items)} items")


if __name__ == "__main__":
    main()
