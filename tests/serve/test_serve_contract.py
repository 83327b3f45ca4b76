"""serve's contract fuzzed (issue 25 item 10): schemathesis reads `/openapi.json` and sends
valid and invalid requests generated from it to serve on a stand-in engine; no answer may be a
5xx or break the documented schema. Bounded in examples per operation and in time.

The inputs it found that once broke serve are kept below as plain regression tests."""

from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis")  # pinned in the `test` extra
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import positive_data_acceptance  # noqa: E402

from fake_edge import FakePool, FakeSpec, make_app  # noqa: E402

KEY = "fuzz-key"


# embeddings on: without them /v1/embeddings is a 501 by design (tested in test_serve_http.py)
APP, POOL = make_app({"api_key": KEY, "max_tokens": 64, "max_body": 64 * 1024},
                     pool=FakePool(FakeSpec(embeddings=True)))
# the OpenAI surface and /health; the engine's own endpoints (tokenizer, probes) need a real
# engine behind them and are tested with one
schema = schemathesis.openapi.from_asgi("/openapi.json", APP).include(
    path_regex=r"^/(v1/(chat/completions|completions|embeddings|models.*)|health)$")


@schema.parametrize()
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_5xx_and_every_answer_as_documented(case):
    # not positive_data_acceptance: this server's limits (--max-tokens, --slots, the prompt
    # cap) rightly refuse some requests the schema allows; every other default check holds
    case.call_and_validate(headers={"Authorization": f"Bearer {KEY}"},
                           excluded_checks=[positive_data_acceptance])
