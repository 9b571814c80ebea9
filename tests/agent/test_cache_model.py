"""Cachegrind simulates the host's own caches (agent/backends/counters.py host_cache_model), read from
a sysfs tree: here a fake one, so the test says what each host shape becomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelgraph.agent.backends.counters import (
    FALLBACK_CACHE_MODEL,
    CacheGeometry,
    host_cache_model,
    nearest_valid_geometry,
)
from kernelgraph.core.signature import CounterName


def fake_sysfs(root: Path, caches: list[tuple[str, int, str, int, int]]) -> Path:
    """index<k>/{type, level, size, ways_of_associativity, coherency_line_size} as Linux writes them."""
    for k, (kind, level, size, ways, line) in enumerate(caches):
        index = root / f"index{k}"
        index.mkdir(parents=True)
        for name, value in (("type", kind), ("level", level), ("size", size),
                            ("ways_of_associativity", ways), ("coherency_line_size", line)):  # fmt: skip
            (index / name).write_text(f"{value}\n")
        (index / "shared_cpu_list").write_text("0\n")
    return root


def _is_valid(g: CacheGeometry) -> bool:
    sets = g.size_bytes // (g.ways * g.line_bytes)
    return sets * g.ways * g.line_bytes == g.size_bytes and sets & (sets - 1) == 0


def test_the_last_level_the_host_reports_is_ll_and_d1_is_its_l1d(tmp_path: Path) -> None:
    # A server part: 48 KiB 12-way L1d, 2 MiB L2, and an L3 of 36 MiB 12-way (49152 sets: invalid).
    root = fake_sysfs(tmp_path, [("Data", 1, "48K", 12, 64), ("Instruction", 1, "32K", 8, 64),
                                 ("Unified", 2, "2048K", 16, 64), ("Unified", 3, "36864K", 12, 64)])  # fmt: skip
    model = host_cache_model(root)
    assert model.origin == "host" and model.ll_level == 3
    assert model.d1 == CacheGeometry(48 << 10, 12, 64)  # 64 sets: valid as it is
    # The size is kept; the associativity nearest 12 that makes the set count a power of two is 9.
    assert model.ll == CacheGeometry(36 << 20, 9, 64) and _is_valid(model.ll)
    assert model.options == ("--I1=32768,8,64", "--D1=49152,12,64", "--LL=37748736,9,64")
    counters = model.counters()
    assert counters[CounterName.CACHE_LL_BYTES] == 36 << 20 and counters[CounterName.CACHE_LL_LEVEL] == 3
    assert counters[CounterName.CACHE_D1_BYTES] == 48 << 10


def test_without_an_l3_the_l2_is_ll(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, [("Data", 1, "32K", 8, 64), ("Instruction", 1, "32K", 8, 64),
                                 ("Unified", 2, "1024K", 16, 64)])  # fmt: skip
    model = host_cache_model(root)
    assert model.ll_level == 2 and model.ll == CacheGeometry(1 << 20, 16, 64)


def test_an_unreadable_or_partial_sysfs_falls_back_to_valgrinds_default_and_says_so(tmp_path: Path) -> None:
    assert host_cache_model(tmp_path / "absent") == FALLBACK_CACHE_MODEL
    only_l1 = fake_sysfs(tmp_path / "l1", [("Data", 1, "48K", 12, 64), ("Instruction", 1, "32K", 8, 64)])
    model = host_cache_model(only_l1)
    assert model is FALLBACK_CACHE_MODEL and model.origin == "fallback"
    assert "default" in model.description


@pytest.mark.parametrize(
    ("size", "ways", "want"),
    [
        (480 << 20, 15, CacheGeometry(480 << 20, 15, 64)),  # 2^19 sets: already valid
        (36 << 20, 12, CacheGeometry(36 << 20, 9, 64)),  # size kept, ways 12 -> 9
        # 35 MiB: no associativity within 6..24 gives a power of two; 47786 sets round to 2^16
        (35 << 20, 12, CacheGeometry(65536 * 12 * 64, 12, 64)),
    ],
)
def test_the_nearest_valid_geometry(size: int, ways: int, want: CacheGeometry) -> None:
    got = nearest_valid_geometry(size, ways, 64)
    assert got == want and _is_valid(got)


def test_a_cache_without_a_geometry_is_an_error() -> None:
    with pytest.raises(ValueError, match="48 B lines"):
        nearest_valid_geometry(1 << 20, 8, 48)
