"""`models update --deploy FILE` reads a file holding only `update:` (every key of it optional),
and a whole deploy.yaml's `update:` section as before."""

from __future__ import annotations

import pytest

from edgepick.cli.cmd_models import _update_policy
from edgepick.errors import InputError


def test_a_file_with_only_update_is_its_policy(tmp_path):
    f = tmp_path / "update.yaml"
    f.write_text("update:\n  max_kld: 2.0\n  canary:\n    window_s: 60\n")
    p = _update_policy(f)
    assert p.max_kld == 2.0 and p.canary.window_s == 60 and p.min_same_top1 == 0.6
    f.write_text("update: {}\n")
    assert _update_policy(f).max_kld == 0.5


def test_a_wrong_key_is_refused_in_one_line(tmp_path):
    f = tmp_path / "update.yaml"
    f.write_text("update:\n  max_kdl: 2.0\n")
    with pytest.raises(InputError, match="max_kdl"):
        _update_policy(f)
