"""The status page, /ui, in a real browser (Debian's Chromium through Playwright) against a real
`edgepick serve` of a two-model team with an API key: without the key the page gets nothing;
with it, it shows the resident model, its memory against the budget and a gate's live figure,
which change after a request and after a model swap; its chat box answers."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from parts import missing, need_module

from edgepick.records.deploy import Baseline, DeployConfig, DeployModel
from edgepick.records.team import EdgeModel, MemoryPlan
from edgepick.registry.store import sha256_of
from serve_harness import serve

KEY = "page-key"
MIB = 1 << 20
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        missing("chromium (Debian's package; .ci/run installs it)")
    return str(path)


def _deploy(tmp: Path, smol: str, tiny: str) -> Path:
    s = EdgeModel(name="smol", path=smol, sha256=sha256_of(smol), need_bytes=150 * MIB)
    t = EdgeModel(name="tiny", path=tiny, sha256=sha256_of(tiny), need_bytes=50 * MIB)
    cfg = DeployConfig(schema_version=2, status="team",
                       model=DeployModel(name="smol", path=smol, sha256=s.sha256),
                       models=[s, t], memory=MemoryPlan(budget_bytes=180 * MIB),
                       baseline=Baseline(ttft_p99_ms=60000.0))
    cfg.runtime.n_ctx = 512
    return cfg.dump(tmp / "deploy.yaml")


@pytest.fixture(scope="module")
def server(smollm2_q4_1, tiny_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("status_page")
    with serve([str(_deploy(tmp, smollm2_q4_1, tiny_model)), "--threads", "1",
                "--api-key", KEY], tmp) as s:
        yield s


@pytest.fixture(scope="module")
def browser():
    sync_api = need_module("playwright.sync_api")  # pinned in the `test` extra
    exe = _chromium()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=FLAGS, headless=True)
        yield b
        b.close()


def _ask(server, model: str) -> None:
    r = httpx.post(server.v1 + "/chat/completions", timeout=120,
                   headers={"Authorization": f"Bearer {KEY}"},
                   json={"model": model, "max_tokens": 4,
                         "messages": [{"role": "user", "content": "Hi"}]})
    assert r.status_code == 200, r.text


def _row(page, table: str, key: str, value: str):
    return page.locator(f"#{table} tr[data-{key}='{value}']")


def test_without_the_key_the_page_gets_nothing(server, browser):
    page = browser.new_page()
    answers = []
    page.on("response", lambda r: answers.append((r.url, r.status)))
    page.goto(server.url + "/ui")
    # the page's CSP allows no eval: waits are locators, never page-side JavaScript
    page.locator("#status-line", has_text="no data without the key").wait_for()
    assert page.locator("#content").is_hidden()
    assert page.locator("#models tbody tr").count() == 0
    statuses = {s for u, s in answers if u.endswith("/ui/status")}
    assert statuses == {401}
    assert KEY not in page.content()
    page.close()


def test_the_page_follows_requests_and_swaps_and_its_chat_answers(server, browser):
    page = browser.new_page()
    page.goto(server.url + "/ui")
    page.fill("#key", KEY)
    page.click("#save-key")
    page.wait_for_selector("#content:not([hidden])")
    assert "of the budget 180 MiB" in page.text_content("#memory")
    assert page.locator("#models td.state-loaded").count() == 0

    _ask(server, "smol")
    smol = _row(page, "models", "model", "smol")
    smol.locator("td.state-loaded").wait_for(timeout=15000)
    assert smol.locator("td.memory").text_content().startswith("150 MiB")
    page.locator("#figures tr[data-figure='TTFT P99'] td.live",
                 has_text=" ms").wait_for(timeout=15000)
    gate = _row(page, "figures", "figure", "TTFT P99")
    assert gate.locator("td").nth(3).text_content() == "60000 ms"  # deploy.yaml's figure
    assert "resident 150 MiB" in page.text_content("#memory")

    _ask(server, "tiny")  # the budget holds one model: smol swaps out
    _row(page, "models", "model", "tiny").locator("td.state-loaded").wait_for(timeout=15000)
    _row(page, "models", "model", "smol").locator("td.state-unloaded").wait_for(timeout=15000)
    assert "resident 50 MiB" in page.text_content("#memory")
    assert "smol (evicted)" in page.text_content("#events")
    page.locator("#routes tbody tr", has_text="edge").locator("td.num").first.filter(
        has_text="2").wait_for(timeout=15000)  # two requests, both on the edge

    page.fill("#chat-input", "Say hello.")
    page.click("#chat-send")
    page.locator("#chat-state", has_text="answered").wait_for(timeout=60000)
    assert page.text_content("#chat-answer").strip()
    page.close()
