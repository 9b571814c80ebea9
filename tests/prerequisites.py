"""What a test needs from the machine. On a developer's machine a missing tool skips the test; in CI
(`CI` set), where `make install` provides Java, Maven, gcc and valgrind, it fails, so that a broken
install step cannot pass as a green run that skipped the real path."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI installs this, so its absence is a broken install step", pytrace=False)
    pytest.skip(reason)
