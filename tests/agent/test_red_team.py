"""Hostile kernels (tests/agent/red_team/) against the evaluator: each is contained or rejected with a
clear reason, the evaluator keeps going, and the EFFECT did not happen.

The world each attack aims at is the test's own: a data home whose Neo4j password file holds a
canary, the same canary in the environment and in a file under HOME, a sentinel path outside any
scratch directory, and a TCP listener on a free localhost port standing in for Bolt. Every C attack
runs twice: through the real backend (admission rejects most of them, naming the symbol) and
"past admission" (a backend whose admission admits everything), so the sandbox alone must contain
it. docs/sandbox.md describes the attack classes.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import itertools
import math
import mmap
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from kernelgraph.agent import loop
from kernelgraph.agent.backends import admission, bubblewrap, isolated
from kernelgraph.agent.backends.bubblewrap import Mount, Rlimits, Sandbox, scratch_dir
from kernelgraph.agent.backends.c import COMPILE_TIMEOUT_S, CBackend
from kernelgraph.agent.backends.isolated import KernelServer
from kernelgraph.agent.backends.sandbox import SandboxLimits
from kernelgraph.agent.backends.timing import IN_PROCESS, ISOLATED, TimingPlan
from kernelgraph.agent.backends.triton import TritonBackend
from kernelgraph.agent.evaluator import output_specs
from kernelgraph.agent.loop import evaluate, keep_decision, optimize
from kernelgraph.agent.proposers.base import Proposal
from kernelgraph.agent.results import CheckResult, Evaluation, Outcome
from kernelgraph.agent.targets import Target, get_target
from kernelgraph.agent.tasks import get_task
from kernelgraph.core.models import RecordResult
from kernelgraph.core.signature import CounterName
from tests.agent.quiet_host import judged, paired_gain, when_the_host_was_quiet
from tests.prerequisites import unavailable

RED_TEAM = Path(__file__).with_name("red_team")
CHEATS = Path(__file__).with_name("cheats")
RESULTS = Path(__file__).parents[2] / "results"  # the adversaries' kernels, as they wrote them
CANARY = "kg-canary-7f3a9c1e-secret"
ORPHAN_NAME = "kgredteamorphan"
QUICK = TimingPlan(warmup=1, min_trials=5, max_trials=8, budget_s=0.3, verified_calls=3)
# For the attacks on the timer: room past min_trials for the later calls to set the median.
ATTACK_TIMING = TimingPlan(warmup=1, min_trials=5, max_trials=30, budget_s=6.0, verified_calls=3)


class _Listener:
    """A TCP listener on a free localhost port that records every connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@dataclass(frozen=True)
class World:
    """What the attacks aim at; `render` fills a kernel template's @PLACEHOLDERS@ with it."""

    password_file: Path
    home: Path
    sentinel: Path
    listener: _Listener

    def render(self, name: str) -> str:
        text = (RED_TEAM / name).read_text()
        for key, value in {
            "@PASSWORD_FILE@": str(self.password_file),
            "@HOME@": str(self.home),
            "@SENTINEL@": str(self.sentinel),
            "@PORT@": str(self.listener.port),
            # what an attacker who read the evaluator knows of the plan it is timed with
            "@SAMPLED_UNTIL@": str(ATTACK_TIMING.warmup + ATTACK_TIMING.min_trials),
            "@SAMPLED@": str(ATTACK_TIMING.verified_calls),
        }.items():
            text = text.replace(key, value)
        return text

    def assert_no_effect(self, *texts: str) -> None:
        """No file escaped, no connection was made and the canary appears in no output."""
        assert not self.sentinel.exists(), "a kernel wrote outside its scratch directory"
        assert self.listener.connections == 0, "a kernel connected to the Bolt stand-in"
        for text in texts:
            assert CANARY not in text, f"the canary leaked: {text[:300]}"


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    data_home = tmp_path / "data-home"
    (data_home / "neo4j").mkdir(parents=True)
    password = data_home / "neo4j" / "password"
    password.write_text(f'"{CANARY}"\n')  # quoted: a valid C string literal for the #include attack
    password.chmod(0o600)
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text(CANARY)
    monkeypatch.setenv("KERNELGRAPH_DATA_HOME", str(data_home))
    monkeypatch.setenv("KERNELGRAPH_NEO4J_PASSWORD", CANARY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    monkeypatch.setenv("HOME", str(home))
    listener = _Listener()
    try:
        yield World(password, home, tmp_path / "escaped.txt", listener)
    finally:
        listener.close()


class _PastAdmissionC(CBackend):
    """Admits everything: the sandbox alone must contain what the kernel does."""

    def _admit(
        self,
        nm_output: str,
        kernel_object: bytes,
        shared_object: bytes,
        disassembly: str,
        isa: str | None,
    ) -> list[admission.Rejection]:
        return []


class _PastAdmissionTriton(TritonBackend):
    def _admit(self, source: str) -> list[admission.Rejection]:
        return []


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> CBackend:
    return CBackend(cache_dir=tmp_path_factory.mktemp("rt-c"), check_timeout_s=10.0, memory_bytes=768 << 20,
                    timing=QUICK, counters=False)  # fmt: skip


@pytest.fixture(scope="module")
def unguarded(tmp_path_factory: pytest.TempPathFactory) -> CBackend:
    return _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-c-past"), check_timeout_s=10.0,
                           memory_bytes=768 << 20, timing=QUICK, counters=False)  # fmt: skip


def _orphans() -> list[str]:
    """Live processes (zombies are dead and cannot act) named like the fork attack's child."""
    found = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        try:
            alive = comm.with_name("stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            if alive and comm.read_text().strip() == ORPHAN_NAME[:15]:
                found.append(comm.parent.name)
        except (OSError, IndexError):
            continue
    return found


def _honest_still_passes(backend: CBackend, target: Target) -> None:
    """The evaluator keeps going after an attack."""
    result = backend.check(get_task("rmsnorm"), (CHEATS / "correct.c").read_text(), target)
    assert result.correct, result.reason


# (kernel, the symbol or construct admission names) for attacks that need a forbidden capability.
ADMISSION_REJECTS = {
    "write_outside.c": "`fopen`",
    "read_password.c": "`fopen`",
    "read_environment.c": "`getenv`",
    "read_home.c": "`opendir`",
    "connect_bolt.c": "`socket`",
    "fork_orphan.c": "`fork`",
    "raw_syscall.c": "`syscall` instruction",
    "hidden_syscall.c": "`syscall` instruction",
    "user_namespace.c": "`unshare`",
    "content_cache.c": "writable global or static data",
    "call_counting.c": "writable global or static data `calls`",
    "label_state.c": "16 bytes in `.bss` that no symbol names",  # nm lists nothing (the fifteenth adversary's way too)
    "ifunc_resolver.c": "indirect function `loaded`",
    "isa_pragma.c": "an instruction of x86-64-v3, beyond the target's x86-64-v2",
    "isa_attribute.c": "an instruction of x86-64-v4, beyond the target's x86-64-v2",
    "isa_libmvec.c": "`_ZGVdN8v_expf`, libmvec's variant for a wider instruction set",
    "wait_on_the_counter.c": "`tpause` instruction (a clock)",
}


@pytest.mark.parametrize("kernel", sorted(ADMISSION_REJECTS))
def test_admission_rejects_with_the_reason(
    kernel: str, world: World, guarded: CBackend, cpu_target: Target
) -> None:
    result = guarded.check(get_task("rmsnorm"), world.render(kernel), cpu_target)
    assert result.outcome == Outcome.REJECTED, result.reason
    assert ADMISSION_REJECTS[kernel] in result.reason, result.reason
    world.assert_no_effect(result.reason)


@pytest.mark.parametrize(
    ("encoding", "mnemonic", "level"),
    [
        ("0f58c1", "addps", "x86-64-v2"),
        ("f30fbcc7", "tzcnt", "x86-64-v2"),  # `rep bsf`: older processors run it as bsf; gcc emits it for v2
        ("660f3817c1", "ptest", "x86-64-v2"),  # SSE4.1
        ("f30fbdc7", "lzcnt", "x86-64-v3"),  # older processors run it as bsr, a different answer
        ("c5f858c1", "vaddps", "x86-64-v3"),  # VEX: AVX
        ("c4e27df2c1", "andn", "x86-64-v3"),  # VEX: BMI1, no v in its name
        ("c4e3791dc100", "vcvtps2ph", "x86-64-v3"),  # F16C, though it ends in ph
        ("66c4e2f9a8c2", "vfmadd213pd", "x86-64-v3"),  # a legacy prefix before the VEX one
        ("62f17c4858c1", "vaddps", "x86-64-v4"),  # EVEX: AVX-512
        ("62e27d4855c1", "vpopcntd", None),  # AVX512_VPOPCNTDQ: in no level
        ("62f5744858c2", "vaddph", None),  # AVX512_FP16
        ("c4e27550c2", "vpdpbusd", None),  # AVX-VNNI, VEX-encoded
        ("660f38dcc1", "aesenc", None),
    ],
)
def test_an_instruction_is_held_to_the_lowest_level_that_has_it(
    encoding: str, mnemonic: str, level: str | None
) -> None:
    assert admission.instruction_level(bytes.fromhex(encoding), mnemonic) == level


def test_a_disassembly_is_refused_for_the_highest_level_it_needs_and_for_what_no_level_has() -> None:
    listing = "\n".join([
        "0000000000001100 <kernel>:",
        "    1100:\tc5 f8 58 c1          \tvaddps %xmm1,%xmm0,%xmm0",
        "    1104:\t62 f1 7c 48 58 c1    \tvaddps %zmm1,%zmm0,%zmm0",
        "    110a:\t62 f1 7c 48 59 c1    \tvmulps %zmm1,%zmm0,%zmm0",
        "    1110:\tf3 0f bc c7          \ttzcnt  %edi,%eax",
        "    1114:\t66 0f 38 dc c1       \taesenc %xmm1,%xmm0",
        "    1119:\tc3                   \tret",
    ])  # fmt: skip
    v2 = [r.reason for r in admission.isa_rejections(listing, "x86-64-v2")]
    assert len(v2) == 2, v2
    assert "`vaddps` at 1104, an instruction of x86-64-v4, beyond the target's x86-64-v2" in v2[0]
    assert "`aesenc` at 1114, of an instruction-set extension no x86-64 level has" in v2[1]
    v4 = [r.reason for r in admission.isa_rejections(listing, "x86-64-v4")]
    assert len(v4) == 1 and "aesenc" in v4[0], v4
    clean = "\n".join(line for line in listing.splitlines() if "aesenc" not in line)
    assert admission.isa_rejections(clean, "x86-64-v4") == []
    assert "could not be disassembled" in admission.isa_rejections("", "x86-64-v4")[0].reason


def test_each_level_admits_its_own_instructions_and_refuses_a_wider_ones(guarded: CBackend) -> None:
    """What the adversary's forms compile to is held to each target's level (admission on every CPU
    target), whatever the host: compiling runs no kernel."""
    task = get_task("rmsnorm")
    admitted = {}
    for name in ("isa_pragma.c", "isa_attribute.c", "isa_libmvec.c"):
        for level in admission.X86_LEVELS:
            target = get_target(f"cpu-{level}")
            built = guarded.compile(
                task, (RED_TEAM / name).read_text(), dataclasses.replace(target, available=True)
            )
            admitted[name, level] = built.ok
    assert admitted == {
        ("isa_pragma.c", "x86-64-v2"): False, ("isa_pragma.c", "x86-64-v3"): True,
        ("isa_pragma.c", "x86-64-v4"): True, ("isa_attribute.c", "x86-64-v2"): False,
        ("isa_attribute.c", "x86-64-v3"): False, ("isa_attribute.c", "x86-64-v4"): True,
        ("isa_libmvec.c", "x86-64-v2"): False, ("isa_libmvec.c", "x86-64-v3"): True,
        ("isa_libmvec.c", "x86-64-v4"): True,
    }  # fmt: skip


def test_code_beyond_the_targets_level_would_be_kept_faster_than_the_level_allows(
    guarded: CBackend, unguarded: CBackend, cpu_target: Target
) -> None:
    """The stop-46 adversary's matmul under a `#pragma GCC target("avx2,fma")`, against the same code
    at what x86-64-v2 allows: past admission (the control) kept at over 2x on a host with AVX2 (3.3x
    when found), a speed no x86-64-v2 machine has; admitted as usual, refused before it runs."""
    task, target = get_task("matmul"), _no_peaks(cpu_target)
    wide = (RED_TEAM / "isa_avx2_matmul.c").read_text()
    pragma = '#pragma GCC target("avx2,fma")\n#define KG_W 8\n'
    assert pragma in wide
    own = wide.replace(pragma, "#define KG_W 4\n")  # a vector per SSE register: v2's best of this code
    refused = evaluate(task, guarded, target, wide, own)  # refused on any host: nothing runs
    assert refused.outcome == Outcome.REJECTED and "beyond the target's x86-64-v2" in refused.reason
    if not get_target("cpu-x86-64-v3").available:
        pytest.skip("this host has no AVX2 and FMA: the control cannot run the wider code")
    faked = when_the_host_was_quiet(lambda: evaluate(task, unguarded, target, wide, own))
    assert faked.outcome == Outcome.KEPT and (faked.speedup or 0) > 2.0, (faked.outcome, faked.reason)


# Past admission, what the sandbox makes of each attack (the kernel may crash trying).
CONTAINED = {
    "write_outside.c": {Outcome.KEPT},  # fopen fails: the path does not exist in the sandbox
    "read_password.c": {Outcome.CRASHED},  # abort() after printing what it read: nothing
    "read_environment.c": {Outcome.CRASHED},
    "read_home.c": {Outcome.CRASHED},
    "connect_bolt.c": {Outcome.KEPT},  # the sandbox's own network namespace has no route out
    "raw_syscall.c": {Outcome.KEPT},
    "hidden_syscall.c": {Outcome.KEPT},  # open(2) refused by seccomp (and the path is not there)
    "user_namespace.c": {Outcome.KEPT},  # unshare(2) refused by seccomp: the kernel computes on
}


@pytest.mark.parametrize("kernel", sorted(CONTAINED))
def test_sandbox_contains_what_admission_would_reject(
    kernel: str, world: World, unguarded: CBackend, guarded: CBackend, cpu_target: Target,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    result = unguarded.check(get_task("rmsnorm"), world.render(kernel), cpu_target)
    assert result.outcome in CONTAINED[kernel], result.reason
    out, err = capfd.readouterr()
    world.assert_no_effect(result.reason, out, err)
    if result.outcome == Outcome.CRASHED:
        assert "leak" in result.reason  # the leak channel worked, and carried nothing
    _honest_still_passes(guarded, cpu_target)


def test_fork_does_not_outlive_the_run(world: World, unguarded: CBackend, cpu_target: Target) -> None:
    assert not _orphans()
    result = unguarded.check(get_task("rmsnorm"), world.render("fork_orphan.c"), cpu_target)
    assert result.correct, result.reason  # the parent's work was right; the child is the attack
    time.sleep(1.5)  # the orphan would write the sentinel after 1 s
    assert not _orphans(), "a process started by the kernel outlived the run"
    world.assert_no_effect(result.reason)


def test_include_of_a_secret_path_leaks_nothing(world: World, guarded: CBackend, cpu_target: Target) -> None:
    task = get_task("rmsnorm")
    built = guarded.compile(task, world.render("include_secret.c"), cpu_target)
    assert not built.ok
    assert "No such file or directory" in built.diagnosis, built.diagnosis
    world.assert_no_effect(built.diagnosis, built.log)
    result = guarded.check(task, world.render("include_secret.c"), cpu_target)
    assert result.outcome == Outcome.COMPILE_ERROR
    world.assert_no_effect(result.reason)


def test_content_cache_gains_nothing_while_timed(
    world: World, unguarded: CBackend, cpu_target: Target
) -> None:
    """Every timed call sees a distinct input variant, so a cache keyed on content never hits."""
    task = get_task("rmsnorm")
    verdict = evaluate(task, unguarded, cpu_target, world.render("content_cache.c"),
                       (CHEATS / "correct.c").read_text())  # fmt: skip
    assert verdict.outcome in {Outcome.DISCARDED, Outcome.KEPT}, verdict.reason
    assert verdict.speedup is not None and verdict.speedup < 3.0, verdict.speedup  # a hit would be >10x


@pytest.mark.parametrize("kernel", ["call_counting.c", "size_gated.c"])
def test_lazy_while_timed_is_incorrect(
    kernel: str, world: World, unguarded: CBackend, cpu_target: Target
) -> None:
    task = get_task("rmsnorm")
    verdict = evaluate(task, unguarded, cpu_target, world.render(kernel), (CHEATS / "correct.c").read_text())
    assert verdict.outcome == Outcome.INCORRECT, verdict.reason
    assert "NaN" in verdict.reason, verdict.reason


def test_background_thread_is_rejected_and_caught_past_admission(
    guarded: CBackend, unguarded: CBackend, cpu_target: Target
) -> None:
    source = (CHEATS / "background_thread.c").read_text()
    rejected = guarded.check(get_task("rmsnorm"), source, cpu_target)
    assert rejected.outcome == Outcome.REJECTED and "`pthread_create`" in rejected.reason
    past = unguarded.check(get_task("rmsnorm"), source, cpu_target)
    assert past.outcome in {Outcome.INCORRECT, Outcome.CRASHED}, past.reason


@pytest.mark.parametrize("kernel", ["huge_stack.c", "memory_hog.c"])
def test_resource_attacks_crash_only_the_kernel(
    kernel: str, world: World, guarded: CBackend, cpu_target: Target
) -> None:
    started = time.monotonic()
    result = guarded.check(get_task("rmsnorm"), world.render(kernel), cpu_target)
    assert result.outcome == Outcome.CRASHED, result.reason
    assert "SIGSEGV" in result.reason or "SIGBUS" in result.reason or "MemoryError" in result.reason
    assert time.monotonic() - started < 10.0
    _honest_still_passes(guarded, cpu_target)


def test_impossible_time_is_implausible_and_never_kept(guarded: CBackend, cpu_target: Target) -> None:
    """A target whose peak the kernel 'beats': re-verification would pass, the outcome stays IMPLAUSIBLE."""
    slow_target = dataclasses.replace(cpu_target, peak_gflops=1e-6, peak_gbps=1e-6)
    task = get_task("rmsnorm")
    baseline = task.source("c", task.baseline_config)
    verdict = evaluate(task, guarded, slow_target, (CHEATS / "correct.c").read_text(), baseline)
    assert verdict.outcome == Outcome.IMPLAUSIBLE, verdict.reason
    assert "exceeds" in verdict.reason and "peak" in verdict.reason
    assert verdict.profile is None  # nothing measured is handed on to be recorded as a kept state


# ------------------------------------------------------------------------------------------ Triton


def _triton_attack(world: World, name: str) -> str:
    task = get_task("rmsnorm", "triton")
    source = task.source("triton", task.baseline_config)
    marker = "import triton.language as tl\n"
    assert marker in source
    return source.replace(marker, marker + world.render(name) + "\n", 1)


@pytest.fixture(scope="module")
def triton_backends(tmp_path_factory: pytest.TempPathFactory) -> tuple[TritonBackend, TritonBackend]:
    cache = tmp_path_factory.mktemp("rt-triton")
    return (
        TritonBackend(cache_dir=cache / "guarded", timeout_s=120, device="interpreter"),
        _PastAdmissionTriton(cache_dir=cache / "past", timeout_s=120, device="interpreter"),
    )


@pytest.mark.parametrize(("attack", "module"), [("triton_os.py", "`os`"), ("triton_socket.py", "`socket`")])
def test_triton_attacks_are_rejected_then_contained(
    attack: str, module: str, world: World, triton_backends: tuple[TritonBackend, TritonBackend],
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    guarded, past = triton_backends
    task = get_task("rmsnorm", "triton")
    source = _triton_attack(world, attack)
    rejected = guarded.check(task, source, get_target("cuda-sm90"))
    assert rejected.outcome == Outcome.REJECTED and f"imports {module}" in rejected.reason, rejected.reason
    result: CheckResult = past.check(task, source, get_target("cuda-sm90"))
    time.sleep(0.5)
    out, err = capfd.readouterr()
    world.assert_no_effect(result.reason, out, err)
    assert not _orphans(), "a process started by the Triton source outlived the worker"
    if attack == "triton_os.py":
        assert result.outcome == Outcome.CRASHED and "leak:" in result.reason, result.reason
        assert "No such file or directory" in result.reason  # the secret paths are not there
    else:
        assert result.correct, result.reason  # the attack ran, reached nothing, and the kernel worked
    assert os.environ["KERNELGRAPH_NEO4J_PASSWORD"] == CANARY  # the test's world was armed


# ---------------------------------------------------------------------------------------- controls


@pytest.mark.parametrize("kernel", ["write_outside.c", "connect_bolt.c", "read_password.c"])
def test_attacks_are_real_without_the_sandbox(
    kernel: str, world: World, tmp_path_factory: pytest.TempPathFactory, cpu_target: Target
) -> None:
    """Control: unconfined and past admission, each attack does reach its target, so the
    containment tests above can fail."""
    naked = _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-naked"), check_timeout_s=10.0,
                            counters=False, sandbox=Sandbox(enabled=False))  # fmt: skip
    result = naked.check(get_task("rmsnorm"), world.render(kernel), cpu_target)
    time.sleep(0.3)  # let the listener thread count the connection
    with pytest.raises(AssertionError):
        world.assert_no_effect(result.reason)


def test_fork_outlives_an_unconfined_run(
    world: World, tmp_path_factory: pytest.TempPathFactory, cpu_target: Target
) -> None:
    """Control for test_fork_does_not_outlive_the_run: without the sandbox the orphans do survive."""
    naked = _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-naked-fork"), check_timeout_s=10.0,
                            counters=False, sandbox=Sandbox(enabled=False))  # fmt: skip
    naked.check(get_task("rmsnorm"), world.render("fork_orphan.c"), cpu_target)
    survivors = _orphans()
    for pid in survivors:  # the test started them: end them by pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    assert survivors, "the control expected the unconfined fork to survive the run"


# ------------------------------------------------------------------- attacks on the evaluator itself


def test_links_planted_in_scratch_are_not_followed(
    world: World, unguarded: CBackend, cpu_target: Target, capfd: pytest.CaptureFixture[str]
) -> None:
    """The run's log and result replaced by links to the password file: the evaluator reads the log
    through its own descriptor and opens results without following links. The seccomp filter refuses
    unlink and symlink, so this layer is tested with the filter off; with it, no link is even made."""
    filtered = unguarded.check(get_task("rmsnorm"), world.render("forge_result.c"), cpu_target)
    assert filtered.outcome == Outcome.CRASHED and "before reporting" in filtered.reason, filtered.reason
    unfiltered = _PastAdmissionC(cache_dir=unguarded._cache(), check_timeout_s=10.0, counters=False,
                                 sandbox=Sandbox(seccomp=False))  # fmt: skip
    result = unfiltered.check(get_task("rmsnorm"), world.render("forge_result.c"), cpu_target)
    assert result.outcome == Outcome.CRASHED, result.reason
    assert "unreadable result" in result.reason, result.reason
    out, err = capfd.readouterr()
    world.assert_no_effect(filtered.reason, result.reason, out, err)


def test_forged_pickle_and_links_from_triton_reach_nothing(
    world: World, triton_backends: tuple[TritonBackend, TritonBackend], capfd: pytest.CaptureFixture[str]
) -> None:
    """A worker result carrying a pickle payload is never unpickled (it would create the sentinel)."""
    _, past = triton_backends
    task = get_task("rmsnorm", "triton")
    source = _triton_attack(world, "triton_forge.py")
    checked = past.check(task, source, get_target("cuda-sm90"))
    compiled = past.compile(task, source, get_target("cuda-sm90"))
    assert checked.outcome == Outcome.CRASHED and "unreadable result" in checked.reason, checked.reason
    assert not compiled.ok
    out, err = capfd.readouterr()
    world.assert_no_effect(checked.reason, compiled.diagnosis, compiled.log, out, err)


# --------------------------------------------------------------- attacks on the timing protocol
# One kernel per class of issue #26, each run past admission (assume the kernel runs any code in its
# own process): through the isolated protocol (agent/backends/isolated.py) it is caught or gains
# nothing; the control runs it through the old in-process protocol, where the attack works. The
# target's peaks are left out in both, so that the protocol alone is tested: an attacker keeps its
# fake under the peak check by skipping less (docs/sandbox.md).

# kernel -> what the isolated protocol's diagnosis names (None: not caught, but no fake speedup)
TIMER_ATTACKS = {
    "noisy_then_lazy.c": "NaN",  # 1: unchecked calls after noisy first calls
    "weak_state.c": "NaN",  # 2: state in weak symbols
    "label_state.c": "NaN",  # 2: state in .bss under a local assembler label
    "omp_state.c": "NaN",  # 2: state in an OpenMP setting
    "sabotage_parent.c": None,  # 3: threads left spinning beside the parent, OpenMP threads dropped
    "learn_checked.c": None,  # 4: which calls are checked, from the gaps between calls
    "forge_times.c": None,  # 5: rewrite the recorded times
}
TIMER_ATTACKS_WITH_A_CLOCK = {"learn_checked.c"}  # it reads the time-stamp counter


def _timer(tmp_path_factory: pytest.TempPathFactory, protocol: str) -> CBackend:
    return _PastAdmissionC(cache_dir=tmp_path_factory.mktemp(f"rt-{protocol}"), check_timeout_s=10.0,
                           memory_bytes=768 << 20, counters=False,
                           timing=dataclasses.replace(ATTACK_TIMING, protocol=protocol))  # fmt: skip


@pytest.fixture(scope="module")
def isolated_timer(tmp_path_factory: pytest.TempPathFactory) -> CBackend:
    return _timer(tmp_path_factory, ISOLATED)


@pytest.fixture(scope="module")
def in_process_timer(tmp_path_factory: pytest.TempPathFactory) -> CBackend:
    return _timer(tmp_path_factory, IN_PROCESS)


def _clocks_left_to_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a kernel that reads the clock to attack another defence (or the test's own stick that does):
    a timed kernel has no clock since stop 53 (`test_a_timed_kernel_has_no_clock`), so that attack no
    longer starts; with the clocks left to it, the test holds the defence of its own class."""
    monkeypatch.setattr(isolated, "CLOCKLESS_KERNELS", False)


def _no_peaks(target: Target) -> Target:
    return dataclasses.replace(target, peak_gflops=None, peak_gbps=None)


def test_the_done_fifo_is_read_only_once_a_calls_clocks_run(
    monkeypatch: pytest.MonkeyPatch, isolated_timer: CBackend, cpu_target: Target
) -> None:
    """Reading the done FIFO wakes a frozen kernel that asked to be signalled then (O_ASYNC, F_SETOWN
    and F_SETSIG SIGCONT on its end, all allowed): each call drains it only after reading the CPU
    time its clock starts from and starting the wall clock, so what a kernel runs once woken is
    charged. Before, the drain came first and a woken kernel ran uncharged on its fresh inputs until
    the readings (stop 42's review)."""
    events: list[str] = []
    drain, process_cpu, perf_counter_ns = KernelServer._drain, KernelServer.process_cpu, time.perf_counter_ns

    def drained(server: KernelServer) -> None:
        events.append("drain")
        drain(server)

    def read_cpu(server: KernelServer, pids: Any) -> int:
        events.append("cpu")
        return process_cpu(server, pids)

    def wall() -> int:
        events.append("wall")
        return perf_counter_ns()

    monkeypatch.setattr(KernelServer, "_drain", drained)
    monkeypatch.setattr(KernelServer, "process_cpu", read_cpu)
    monkeypatch.setattr(isolated.time, "perf_counter_ns", wall)
    source = (CHEATS / "correct.c").read_text()
    # One kernel, not a comparison: judged on a busy host too (evaluator 8's rule holds comparisons only).
    profile = isolated_timer.profile(get_task("rmsnorm"), source, cpu_target)
    assert profile.outcome == Outcome.KEPT, profile.reason
    assert events.count("drain") >= ATTACK_TIMING.min_trials
    for i, event in enumerate(events):
        if event == "drain":  # the last readings before it: the CPU clock, then the wall clock
            assert events[i - 2 : i] == ["cpu", "wall"], events[max(0, i - 6) : i + 1]


@pytest.mark.parametrize("kernel", sorted(TIMER_ATTACKS))
def test_the_isolated_timer_is_not_fooled(
    kernel: str, world: World, isolated_timer: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kernel in TIMER_ATTACKS_WITH_A_CLOCK:
        _clocks_left_to_the_kernel(monkeypatch)
    task = get_task("rmsnorm")
    verdict = judged(lambda: evaluate(
        task, isolated_timer, _no_peaks(cpu_target), world.render(kernel), (CHEATS / "correct.c").read_text()
    ))  # fmt: skip
    caught = TIMER_ATTACKS[kernel]
    if caught is not None:
        assert verdict.outcome == Outcome.INCORRECT, verdict.reason
        assert "while timed: timed call" in verdict.reason and caught in verdict.reason, verdict.reason
    else:  # correct, so judged on its time: the one it earned
        assert verdict.outcome in {Outcome.KEPT, Outcome.DISCARDED, Outcome.INCORRECT}, verdict.reason
        if verdict.outcome != Outcome.INCORRECT:
            assert verdict.speedup is not None and verdict.speedup < 1.6, (verdict.speedup, verdict.reason)


# sabotage_parent.c has no control: on this AMD host denormals are not slow, and threads spinning
# beside the parent slow both kernels about alike on 2 loaded cores, so the attack's effect in one
# process is not reliable enough to assert (docs/sandbox.md).
@pytest.mark.parametrize("kernel", sorted(set(TIMER_ATTACKS) - {"sabotage_parent.c"}))
def test_timer_attacks_work_against_the_in_process_protocol(
    kernel: str, world: World, in_process_timer: CBackend, cpu_target: Target
) -> None:
    """Control: with the defence off (the old protocol) each attack is kept with a fake speedup."""
    task = get_task("rmsnorm")
    verdict = evaluate(
        task,
        in_process_timer,
        _no_peaks(cpu_target),
        world.render(kernel),
        (CHEATS / "correct.c").read_text(),
    )
    assert verdict.outcome == Outcome.KEPT, verdict.reason
    assert verdict.speedup is not None and verdict.speedup > 1.5, verdict.speedup


def test_an_early_answer_stops_no_clock(world: World, isolated_timer: CBackend, cpu_target: Target) -> None:
    """Found attacking the isolated protocol: the kernel answers "done" on the FIFO as a call starts
    and works on; it is frozen as it answers, so the outputs are unfinished when checked."""
    task = get_task("rmsnorm")
    verdict = evaluate(task, isolated_timer, _no_peaks(cpu_target), world.render("early_answer.c"),
                       (CHEATS / "correct.c").read_text())  # fmt: skip
    assert verdict.outcome == Outcome.INCORRECT, verdict.reason
    assert "NaN" in verdict.reason, verdict.reason


def test_skipped_rows_are_found_by_the_rows_drawn_after_each_call(
    world: World, isolated_timer: CBackend, cpu_target: Target
) -> None:
    """Found attacking the isolated protocol: finite garbage in 1/16 of the rows escapes the NaN scan;
    64 rows drawn after every call find it (each call misses it with probability (15/16)^64 < 2%)."""
    verdict = evaluate(get_task("rmsnorm"), isolated_timer, _no_peaks(cpu_target), world.render("skip_rows.c"),
                       (CHEATS / "correct.c").read_text())  # fmt: skip
    assert verdict.outcome == Outcome.INCORRECT, verdict.reason
    assert "while timed: timed call" in verdict.reason and "outside rtol" in verdict.reason, verdict.reason


def test_a_truncated_shared_buffer_crashes_only_the_kernel(
    world: World, isolated_timer: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found attacking the isolated protocol: the kernel truncates the file its buffers are mapped
    from; the evaluator checks the size once the child is frozen, before it touches the mapping.
    Since stop 53 a timed kernel cannot open a file (the clock filter refuses openat: /proc carries
    the time), so the attack leaves its outputs unwritten; the size check is held with the filter
    left off."""
    task = get_task("rmsnorm")
    profile = isolated_timer.profile(task, world.render("truncate_shared.c"), _no_peaks(cpu_target))
    assert profile.outcome == Outcome.INCORRECT and "unwritten" in profile.reason, profile.reason
    _clocks_left_to_the_kernel(monkeypatch)
    profile = isolated_timer.profile(task, world.render("truncate_shared.c"), _no_peaks(cpu_target))
    assert profile.outcome == Outcome.CRASHED, profile.reason
    assert "resized the shared buffers" in profile.reason or "exited" in profile.reason, profile.reason
    _honest_still_passes(isolated_timer, cpu_target)


def test_the_inputs_file_is_writable_by_no_one_and_a_resize_is_seen() -> None:
    """The evaluator writes the inputs through the mapping it made first; the file and its directory
    then allow no write to anyone (where the sandbox's uid owns them, unprivileged, the permission
    bits are what is left), and a resize, which would make the evaluator's next touch raise SIGBUS,
    is seen before that touch (`KernelServer.freeze` checks `intact`)."""
    task = get_task("rmsnorm")
    inputs = task.make_inputs(7, True)
    with isolated.shared_inputs(inputs, output_specs(task, inputs)) as shared:
        assert (
            shared.path.stat().st_mode & 0o777 == 0o444 and shared.directory.stat().st_mode & 0o777 == 0o555
        )
        shared.arrays["x"][:] = 1.5  # the evaluator's own mapping still writes
        assert shared.intact() and float(shared.arrays["x"].min()) == 1.5
        shared.path.chmod(0o644)
        os.truncate(shared.path, 4096)
        assert not shared.intact()
    assert not shared.directory.exists()


@pytest.mark.parametrize("read_only", [True, False], ids=["guarded", "control"])
def test_a_kernel_cannot_write_the_inputs_it_is_checked_against(
    read_only: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    cpu_target: Target,
) -> None:
    """The kernels read one copy of each call's inputs, the copy the evaluator computes the reference
    from (`SharedInputs`). rewrite_inputs.c zeroes its input and writes zeros on its first 7 calls at
    the timed size, honest after. Control, the copy mapped writable: timed alone (as a loop's
    baseline is), every call agrees with the reference of the zeros the copy then holds, the
    verification calls after timing are honest, and it is kept at a fraction of the honest kernel's
    time (in a comparison its parent, when called first, disagrees with that reference: void).
    Guarded: its first write faults."""
    monkeypatch.setattr(isolated, "READ_ONLY_INPUTS", read_only)
    plan = TimingPlan(warmup=1, min_trials=6, max_trials=6, budget_s=6.0, protocol=ISOLATED)
    backend = _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-rewrite"), check_timeout_s=10.0,
                              memory_bytes=768 << 20, counters=False, timing=plan)  # fmt: skip
    task, target = get_task("rmsnorm"), _no_peaks(cpu_target)
    attack = backend.profile(task, (RED_TEAM / "rewrite_inputs.c").read_text(), target)
    if read_only:
        assert attack.outcome == Outcome.CRASHED, attack.reason
        assert "SIGSEGV" in attack.reason and "read-only" in attack.reason, attack.reason
        return
    honest = backend.profile(task, (CHEATS / "correct.c").read_text(), target)
    assert honest.outcome == Outcome.KEPT, honest.reason
    assert attack.outcome == Outcome.KEPT, attack.reason
    # A fake speedup: from the cold state (evaluator 17) its two memsets take 0.56-0.64 of the honest
    # kernel's time (under a test suite's load; under half warm), still a gain no honest change made.
    assert attack.median_ns < 0.8 * honest.median_ns, (attack.median_ns, honest.median_ns)


def test_work_in_threads_that_end_within_a_call_is_not_hidden_from_the_clock(
    world: World, isolated_timer: CBackend, cpu_target: Target
) -> None:
    """Found attacking the isolated protocol's CPU-time clock: threads started and joined inside
    each call take their CPU time with them. Each call is charged the process's own total (dead
    threads included), and over the run the process totals show what the live threads' readings
    missed: refused when it is over the allowance, and never faster than it is."""
    verdict = judged(lambda: evaluate(get_task("rmsnorm"), isolated_timer, _no_peaks(cpu_target),
                                      world.render("thread_per_call.c"), (CHEATS / "correct.c").read_text()))  # fmt: skip
    if verdict.outcome == Outcome.INCORRECT:
        assert "threads that ended within calls" in verdict.reason, verdict.reason
    else:  # a run that stopped early, its hidden CPU under the allowance: judged on what it was charged
        assert verdict.outcome == Outcome.DISCARDED, verdict
        assert paired_gain(verdict) < 1.1, verdict  # a hidden thread's work would read 2x or more


def test_work_in_a_process_reaped_within_a_call_is_refused(
    world: World, isolated_timer: CBackend, tmp_path_factory: pytest.TempPathFactory, cpu_target: Target
) -> None:
    """Found by the second adversary (it passes admission as written): 7/8 of the rows are computed
    by a clone(CLONE_VM) process, not a thread, that is reaped (SIGCHLD ignored) before the call
    returns, so neither the per-thread clock nor the process's own CPU total sees its time. The kernel
    filter lets clone make threads only, so the kernel falls back to its own serial loop and gains
    nothing; the control, without the filter, is kept with a fake speedup."""
    task, honest = get_task("rmsnorm"), (CHEATS / "correct.c").read_text()
    source = world.render("hidden_process.c")
    verdict = judged(lambda: evaluate(task, isolated_timer, _no_peaks(cpu_target), source, honest))
    assert verdict.outcome in {Outcome.KEPT, Outcome.DISCARDED}, verdict.reason
    assert verdict.speedup is not None and verdict.speedup < 1.6, verdict.speedup
    unfiltered = _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-process"), check_timeout_s=10.0,
                                 memory_bytes=768 << 20, counters=False, sandbox=Sandbox(seccomp=False),
                                 timing=dataclasses.replace(ATTACK_TIMING, protocol=ISOLATED))  # fmt: skip
    control = when_the_host_was_quiet(
        lambda: evaluate(task, unfiltered, _no_peaks(cpu_target), source, honest)
    )
    assert control.outcome == Outcome.KEPT, control.reason
    assert control.speedup is not None and control.speedup > 1.6, control.speedup


# ------------------------------------------------ second adversary, longer (stop 25; docs/sandbox.md)


def _calls_untimed_cpu(artifact: str, target: Target, calls: int) -> list[int]:
    """Per call of `artifact` through the isolated protocol's server: the CPU time its busiest thread
    used in the call minus the time the call was given (positive: CPU time that escaped the clock)."""
    escaped = []
    with _calibrated_and_loaded(artifact, small=True, threads=target.cores or 1) as (server, deadline, _):
        for _ in range(calls):
            before = server.thread_cpu()
            took, _ = server.call(deadline)
            used = max(ns - before.get(tid, 0) for tid, ns in server.thread_cpu().items())
            escaped.append(used - took)
    return escaped


def test_work_after_a_forged_answer_is_timed(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the stop-25 adversary: the kernel writes "done" on the FIFO itself as a call starts
    and works on until the SIGSTOP lands (150 idle threads made the evaluator take 2.7 ms to send
    it); when it finishes inside that window every call is correct and the work after the answer is
    untimed (results/redteam-stop25 a02, a12: 0.8 and 0.25 ms of every call). The window is widened
    here by a 30 ms pause before each stop, so the test does not depend on the machine's load. The
    clock now ends when the process is stopped, so no CPU time of a call escapes it; the control ends
    it at the answer, as before, and 20 ms of each call escape."""
    built = unguarded.compile(get_task("rmsnorm"), (RED_TEAM / "late_answer.c").read_text(), cpu_target)
    assert built.ok and built.artifact, built.diagnosis
    freeze = KernelServer.freeze

    def slow_freeze(server: KernelServer) -> None:
        time.sleep(0.03)
        freeze(server)

    monkeypatch.setattr(KernelServer, "freeze", slow_freeze)
    defended = _calls_untimed_cpu(built.artifact, cpu_target, 6)
    assert max(defended) <= 0, defended
    monkeypatch.setattr(isolated, "CLOCK_ENDS_WHEN_STOPPED", False)
    control = _calls_untimed_cpu(built.artifact, cpu_target, 6)
    assert sorted(control)[len(control) // 2] > 5_000_000, control  # most calls: > 5 ms not in their time


def test_work_in_threads_that_end_within_a_call_is_charged_to_it(
    world: World,
    tmp_path_factory: pytest.TempPathFactory,
    cpu_target: Target,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the stop-25 adversary (results/redteam-stop25/a13: kept 1.28x with its parent's own
    algorithm): part of the rows in a thread started and joined inside each call, kept under the
    whole-run check's allowance for CPU time in ended threads (10% + 30 ms: 30% of the rows of this
    plan's 10 timed calls of ~6 ms). The process's CPU clock (ended threads included) is read
    around every call and what the live threads do not account for is charged to the call; the
    control, without the charge, is kept with a fake speedup."""
    plan = TimingPlan(warmup=1, min_trials=8, max_trials=10, budget_s=6.0, protocol=ISOLATED)
    backend = _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-ended"), check_timeout_s=10.0,
                              memory_bytes=768 << 20, counters=False, timing=plan)  # fmt: skip
    task, honest = get_task("rmsnorm"), (CHEATS / "correct.c").read_text()
    source = world.render("thread_share_per_call.c").replace("@HIDDEN_PERCENT@", "30")
    verdict = judged(lambda: evaluate(task, backend, _no_peaks(cpu_target), source, honest))
    # Charged per call, so judged on what it earned; or over the whole run's allowance too (39 ms
    # against 36, late in a loaded suite at stop 53): caught either way.
    if verdict.outcome == Outcome.INCORRECT:
        assert "threads that ended within calls" in verdict.reason, verdict.reason
    else:
        assert verdict.outcome in {Outcome.KEPT, Outcome.DISCARDED}, verdict.reason
        assert paired_gain(verdict) < 1.08, verdict  # seen: 0.93-0.98
    monkeypatch.setattr(isolated, "WALL_CAPPED_CLOCK", False)  # stop 25's per-thread critical path ...
    monkeypatch.setattr(isolated, "CHARGE_ENDED_THREADS", False)  # ... without the ended threads' charge
    # ... and the whole run's allowance out of the way (at 37-39 ms against 36 it fired in full suites
    # at stop 53): what the control shows is what the per-call charge stops.
    monkeypatch.setattr(isolated, "HIDDEN_CPU_SHARE", 100.0)
    control = judged(lambda: evaluate(task, backend, _no_peaks(cpu_target), source, honest))
    # The undefended clock charges less for the same calls: seen 1.16-1.39 and kept on quiet hosts,
    # 0.97-1.10 against 0.77-0.98 defended after a long run (the per-call thread's start then costs
    # the main thread more, for both clocks alike); what holds on every host is the gap.
    assert control.outcome in {Outcome.KEPT, Outcome.DISCARDED}, control.reason
    # (Caught as incorrect, the defended arm has no speedup: the control is then held over none.)
    assert control.speedup is not None and control.speedup > (verdict.speedup or 0) + 0.05, (
        control.speedup,
        verdict.speedup,
    )


def test_a_counter_file_the_kernel_wrote_is_refused(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the stop-25 adversary (results/redteam-stop25/a09: kept 3.8x with 1M instructions and
    no cache miss recorded for a 32 MB sum): in the counted run the kernel writes cachegrind's out file
    itself and makes it read-only, so valgrind cannot replace it. The file's totals must be those
    valgrind prints on its own log, which the kernel cannot suppress; the control, without that
    check, stores the forged count. Since stop 54 each counted run is a step with a uid of its own
    (`bubblewrap.STEP_UIDS`), and the call's kernel cannot even read the skip run's file (valgrind
    makes it 0600): it forges nothing. The two checks after put both runs under one uid, as before."""
    from kernelgraph.agent.backends import counters
    from kernelgraph.agent.backends.counters import cachegrind_counters, valgrind_version

    if not valgrind_version():
        unavailable("valgrind is not installed")
    task = get_task("rmsnorm")
    built = unguarded.compile(task, (RED_TEAM / "write_counter_file.c").read_text(), cpu_target)
    assert built.ok and built.artifact, built.diagnosis
    inputs = task.make_inputs(7, True)
    unread = cachegrind_counters(task, built.artifact, sandbox=Sandbox(), inputs=inputs)
    # valgrind's own count, not the forged 1000
    assert not unread.incorrect and unread.counters["instructions"] > 10 * 1000.0, unread
    monkeypatch.setattr(bubblewrap, "STEP_UIDS", False)
    refused = cachegrind_counters(task, built.artifact, sandbox=Sandbox(), inputs=inputs)
    assert refused.incorrect and "not valgrind's" in refused.incorrect, refused
    assert "Ir " in refused.incorrect and "in the file" in refused.incorrect and not refused.counters, refused
    monkeypatch.setattr(counters, "summary_disagreement", lambda totals, log: "")
    forged = cachegrind_counters(task, built.artifact, sandbox=Sandbox(), inputs=inputs)
    assert forged.source == "cpu_cachegrind" and not forged.incorrect, forged
    assert forged.counters["instructions"] == 1000.0, forged.counters  # the kernel's own figure, stored


@pytest.mark.xfail(strict=True, reason="not defended: a kernel can tell the counted run from the timed one "
                   "(docs/sandbox.md, second adversary); strict, so a fix shows up as a pass")  # fmt: skip
def test_counters_describe_the_code_that_was_timed(world: World, tmp_path_factory: pytest.TempPathFactory,
                                                   cpu_target: Target) -> None:  # fmt: skip
    """Found by the second adversary (it passes admission as written): the kernel reads
    /proc/self/maps (libc reached by address arithmetic), runs its loop once when valgrind is mapped
    and four times when timed: the counters stored are those of a quarter of the timed work."""
    backend = CBackend(cache_dir=tmp_path_factory.mktemp("rt-counters"), check_timeout_s=30.0,
                       memory_bytes=768 << 20, timing=QUICK)  # fmt: skip
    task = get_task("rmsnorm")
    honest = backend.profile(task, (CHEATS / "correct.c").read_text(), _no_peaks(cpu_target))
    gated = backend.profile(task, world.render("valgrind_gated.c"), _no_peaks(cpu_target))
    assert honest.outcome == gated.outcome == Outcome.KEPT, (honest.reason, gated.reason)
    assert gated.median_ns > 2.5 * honest.median_ns  # the timed code does ~4x the work ...
    assert gated.counters["instructions"] > 2.5 * honest.counters["instructions"]  # ... and is counted so


# ------------------------------------------------------------------ defence in depth (issue 27)


def test_a_syscall_hidden_inside_another_instruction_is_found(
    world: World, guarded: CBackend, unguarded: CBackend, tmp_path_factory: pytest.TempPathFactory,
    cpu_target: Target,
) -> None:  # fmt: skip
    """Admission scans every byte offset of the linked object's executable sections."""
    task = get_task("rmsnorm")
    source = world.render("hidden_syscall.c")
    rejected = guarded.check(task, source, cpu_target)
    assert rejected.outcome == Outcome.REJECTED, rejected.reason
    assert (
        "`syscall` instruction" in rejected.reason and "hidden inside another instruction" in rejected.reason
    )
    # Control: a scan of decoded instructions, the check before, sees no syscall in this object ...
    built = unguarded.compile(task, source, cpu_target)
    assert built.ok and built.artifact, built.diagnosis
    disassembly = subprocess.run(["objdump", "-d", built.artifact], capture_output=True, text=True).stdout
    assert "movl" in disassembly or "mov " in disassembly
    assert not re.search(r"\s(syscall|sysenter|int\s+\$0x80)\b", disassembly)
    # ... and, unconfined, the hidden call does open and write the sentinel.
    naked = _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-naked-hidden"), check_timeout_s=10.0,
                            counters=False, sandbox=Sandbox(enabled=False))  # fmt: skip
    naked.check(task, source, cpu_target)
    assert world.sentinel.exists(), "the control expected the hidden syscall to write the sentinel"


def test_the_kernel_gets_no_user_namespace(
    world: World, unguarded: CBackend, tmp_path_factory: pytest.TempPathFactory, cpu_target: Target
) -> None:
    """Past admission, unshare(CLONE_NEWUSER) is refused by the seccomp filter; without the filter (the
    control) the kernel gets a user namespace, every capability in it and a netfilter socket."""
    task = get_task("rmsnorm")
    source = world.render("user_namespace.c")
    contained = unguarded.check(task, source, cpu_target)
    assert contained.correct, contained.reason
    unfiltered = _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-no-seccomp"), check_timeout_s=10.0,
                                 counters=False, sandbox=Sandbox(seccomp=False))  # fmt: skip
    control = unfiltered.check(task, source, cpu_target)
    assert control.outcome == Outcome.CRASHED and "user namespace created" in control.reason, control.reason


def test_no_step_may_create_a_namespace(tmp_path: Path) -> None:
    """bubblewrap loads the step filter for every sandboxed step (the compiler and valgrind too)."""
    for argv in (["/usr/bin/unshare", "-U", "true"], ["/usr/bin/unshare", "-Un", "true"]):
        filtered = Sandbox().run(argv, mounts=[], env={}, cwd=Path("/"), limits=Rlimits(), timeout_s=10)
        assert filtered.returncode != 0 and "Operation not permitted" in filtered.stderr, filtered
        unfiltered = Sandbox(seccomp=False).run(argv, mounts=[], env={}, cwd=Path("/"), limits=Rlimits(),
                                                timeout_s=10)  # fmt: skip
        assert unfiltered.returncode == 0, unfiltered  # the control: without the filter it works


def _filled(reason: str) -> tuple[int, int]:
    found = re.search(r"leak: tmp=(-?\d+) scratch=(-?\d+) MiB", reason)
    assert found, reason
    return int(found[1]), int(found[2])


def test_writable_filesystems_have_a_size_cap(
    world: World, unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/tmp (a tmpfs: host memory) and the scratch directory (the host's disk) are capped. The caps
    are lowered here so the attack stays cheap; the control lifts them and the attack writes it all."""
    if os.geteuid() != 0:
        unavailable("the scratch directory is a capped tmpfs only when the evaluator runs as root")
    task = get_task("rmsnorm")
    source = world.render("fill_filesystems.c").replace("@FILL_MIB@", "48")
    monkeypatch.setattr(bubblewrap, "TMP_BYTES", 8 << 20)
    monkeypatch.setattr(bubblewrap, "SCRATCH_BYTES", 16 << 20)
    result = unguarded.check(task, source, cpu_target)
    tmp, scratch = _filled(result.reason)
    assert 0 <= tmp <= 8 and 0 <= scratch <= 16, result.reason
    monkeypatch.setattr(bubblewrap, "TMP_BYTES", 1 << 40)
    monkeypatch.setattr(bubblewrap, "_mount_tmpfs", lambda path, size: False)
    assert _filled(unguarded.check(task, source, cpu_target).reason) == (48, 48)


@pytest.mark.parametrize(("kernel", "says"), [("self_include.c", "#include nested depth"),
                                               ("macro_bomb.c", "ran out of memory or CPU time")])  # fmt: skip
def test_exploding_sources_are_a_compile_error_within_seconds(
    kernel: str, says: str, guarded: CBackend, cpu_target: Target
) -> None:
    started = time.monotonic()
    result = guarded.check(get_task("rmsnorm"), (RED_TEAM / kernel).read_text(), cpu_target)
    assert result.outcome == Outcome.COMPILE_ERROR and says in result.reason, result.reason
    assert time.monotonic() - started < COMPILE_TIMEOUT_S


@pytest.mark.parametrize("kernel", ["self_include.c", "macro_bomb.c"])
def test_exploding_sources_run_on_without_the_compile_limits(kernel: str) -> None:
    """Control: gcc without the include depth limit and with loose rlimits is still at it after 6 s."""
    with scratch_dir("kg-rt-bomb-") as work:
        (work / "kernel.c").write_text((RED_TEAM / kernel).read_text())
        done = Sandbox().run(["gcc", "-O2", "-c", "kernel.c"], mounts=[Mount(work, writable=True)], env={},
                             cwd=work, limits=Rlimits(address_space_bytes=4 << 30), timeout_s=6)  # fmt: skip
    assert done.timed_out, done


def test_counters_come_from_the_admitted_object(
    guarded: CBackend, cpu_target: Target, tmp_path: Path
) -> None:
    """A kernel that works only when it is not a PIE build is counted doing its work: cachegrind runs
    the admitted kernel.so. Control: a separate PIE build of the source, what was counted before,
    executes almost nothing."""
    from kernelgraph.agent.backends.counters import cachegrind_counters, valgrind_version

    if not valgrind_version():
        unavailable("valgrind is not installed")
    task = get_task("rmsnorm")
    inputs = task.make_inputs(7, True)
    counted = {}
    for name, source in (("gated", (RED_TEAM / "pie_gated.c").read_text()),
                         ("honest", (CHEATS / "correct.c").read_text())):  # fmt: skip
        built = guarded.compile(task, source, cpu_target)
        assert built.ok and built.artifact, built.diagnosis
        report = cachegrind_counters(task, built.artifact, sandbox=Sandbox(), inputs=inputs)
        assert report.source == "cpu_cachegrind", report.note
        counted[name] = report.counters["instructions"]
    assert counted["gated"] >= 0.5 * counted["honest"] > 0, counted
    # The control: the old way, each source rebuilt as its own PIE program with the harness.
    assert counted["honest"] - counted["gated"] < 0.1 * counted["honest"]
    separate = {name: _separate_build_instructions(task, inputs, source)
                for name, source in (("gated", (RED_TEAM / "pie_gated.c").read_text()),
                                     ("honest", (CHEATS / "correct.c").read_text()))}  # fmt: skip
    assert separate["honest"] - separate["gated"] > 0.5 * counted["honest"], (separate, counted)


def _separate_build_instructions(task: Any, inputs: dict[str, Any], source: str) -> float:
    """Instructions of the whole program the evaluator before counted: harness and source built
    together as one (PIE) program."""
    from kernelgraph.agent.backends.counters import harness_source, parse_cachegrind_summary

    with scratch_dir("kg-rt-pie-") as work:
        (work / "kernel.c").write_text(source)
        (work / "harness.c").write_text(harness_source(task, inputs))
        files = []
        for k, array in enumerate(inputs.values()):
            array.tofile(work / f"in{k}.bin")
            files.append(str(work / f"in{k}.bin"))
        steps = [
            ["gcc", "-O2", "harness.c", "kernel.c", "-o", "harness", "-lm"],
            ["valgrind", "--tool=cachegrind", "--cachegrind-out-file=cg.out", "./harness", "call", *files],
        ]
        for argv in steps:
            done = Sandbox().run(argv, mounts=[Mount(work, writable=True)], env={}, cwd=work, limits=Rlimits(),
                                 timeout_s=120)  # fmt: skip
            assert done.returncode == 0, done.stderr[-500:]
        return parse_cachegrind_summary((work / "cg.out").read_text())["Ir"]


# ------------------------------------------------ a call's overhead (stop 26; docs/sandbox.md#cost)

_MARK_LOADED = """
#include <stdio.h>
/* marks, from its constructor, the moment the kernel's code is loaded into the child */
__attribute__((constructor)) static void mark_loaded(void) {
    FILE* f = fopen("loaded", "w");
    if (f) fclose(f);
}
"""


def test_the_call_overhead_is_measured_before_the_kernel_is_loaded(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a call costs beyond the kernel is subtracted from every timed call, so a kernel that
    could run while it is measured (a constructor's thread burning CPU) would buy a faster time. It
    is measured before the kernel's object is opened: the constructor has not run by then."""
    task = get_task("rmsnorm")
    source = task.source("c", task.baseline_config) + _MARK_LOADED
    seen: list[tuple[bool, bool]] = []
    measure = isolated.call_overhead

    def watched(servers: list[KernelServer], deadline: float, prepare: Any) -> isolated.CallOverhead:
        loaded_before = any((s.work / "loaded").exists() for s in servers)
        overhead = measure(servers, deadline, prepare)
        seen.append((loaded_before, any((s.work / "loaded").exists() for s in servers)))
        return overhead

    monkeypatch.setattr(isolated, "call_overhead", watched)
    profile = unguarded.profile(
        task, source, cpu_target, parent_source=task.source("c", task.baseline_config)
    )
    assert profile.outcome in (Outcome.KEPT, Outcome.DISCARDED), profile.reason
    assert seen == [(False, False)]  # one measurement, made before either kernel was loaded
    assert profile.counters[CounterName.CALL_OVERHEAD_NS] > 0
    assert profile.counters[CounterName.CALL_WALL_OVERHEAD_NS] > 0


@contextlib.contextmanager
def _calibrated_and_loaded(
    artifact: str, *, small: bool, threads: int
) -> Iterator[tuple[KernelServer, float, isolated.CallOverhead]]:
    """`artifact` as rmsnorm's kernel in the isolated protocol's child, placed as the evaluator places
    a kernel (`Placement`: with `threads` 1 on one CPU, else on every CPU), past the evaluator's
    calibration (its stand-ins) and loaded: the server, the deadline of its calls, the overhead."""
    task = get_task("rmsnorm")
    inputs = task.make_inputs(7, small)
    limits = SandboxLimits(timeout_s=20.0, memory_bytes=768 << 20, threads=threads)
    with (
        scratch_dir("kg-rt-served-") as work,
        isolated.shared_inputs(inputs, output_specs(task, inputs)) as shared,
    ):
        server = KernelServer(artifact, shared, list(task.sizes(inputs).values()), limits, work)
        try:
            deadline = time.monotonic() + limits.timeout_s
            server.wait_ready(deadline)
            server.freeze()
            allowed = frozenset(os.sched_getaffinity(0))
            server.place(frozenset({min(allowed)}) if threads == 1 else allowed)
            overhead = isolated.call_overhead([server], deadline, lambda *_: None)
            server.load_kernel(deadline)
            yield server, deadline, overhead
        finally:
            server.close()


def test_an_empty_call_costs_about_the_measured_overhead(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in's own CPU time is taken off what a call of it measured, so the overhead is the
    hand-over's alone: a kernel that returns at once costs about that. On a VM the hand-over's cost
    moves between levels that last many calls (about 12 and 35-39 us here), so a median of 31 calls
    can sit on one level and the calibration's median of 8 on the other (CI, stop 58: 13.9 against
    29.4 us; 2.54x in one of 48 children here). Their floors usually agree within 0.78-1.50x (24
    fresh children, results/stop59/floor_probe.py), but every calibration sample can sit on the
    upper level while the empty calls sit on the lower (CI, stop 61: floors 38.7 against 12.3 us,
    3.1x), so the floors are held to the two levels' ratio, 4x either way. Not taking the stand-in's
    0.5 ms off, or taking off more than it spent, would put the figures over a decade apart."""
    samples: list[int] = []
    sample = KernelServer.overhead_sample

    def recorded(server: KernelServer, deadline: float, stand_in: bytes) -> int:
        ns = sample(server, deadline, stand_in)
        if stand_in == b"n":  # the serial stand-in's: the CPU clock's overhead
            samples.append(ns)
        return ns

    monkeypatch.setattr(KernelServer, "overhead_sample", recorded)
    built = unguarded.compile(get_task("rmsnorm"), "void kernel(void) {}\n", cpu_target)
    assert built.ok and built.artifact, built.diagnosis
    with _calibrated_and_loaded(built.artifact, small=True, threads=1) as (server, deadline, calibrated):
        empty = sorted(server.call(deadline)[0] for _ in range(31))
    assert 0 < min(samples) <= calibrated.cpu_ns <= max(samples) < 5_000_000, (calibrated, samples)
    assert 0.25 * min(samples) <= empty[0] <= 4.0 * min(samples), (samples, empty)
    assert 0.25 * calibrated.cpu_ns <= empty[len(empty) // 2] <= 4.0 * calibrated.cpu_ns, (calibrated, empty)


_SERIAL_WORK = "static volatile float s;\nstatic void work(void) { for (int i = 0; i < 60000; i++) s = s * 0.5f + 1.0f; }\n"
# The same work, after a first call that starts OpenMP's team: its worker then sleeps through every call.
_WORK_BESIDE_AN_IDLE_WORKER = (
    _SERIAL_WORK
    + """#include <omp.h>
static volatile int slot[64];
static int calls;
void kernel(void) {
    if (!calls++) {
#pragma omp parallel
        slot[omp_get_thread_num()]++;
    }
    work();
}
"""
)


def test_a_kernels_idle_thread_is_not_charged_the_hand_over_it_adds(
    unguarded: CBackend, cpu_target: Target
) -> None:
    """Every thread of a kernel pays the hand-over on every call: the stop after the answer wakes an
    idle OpenMP worker to join the group stop and SIGCONT wakes it again (10-35 us of CPU time a
    call on stop 66's 2-core host, results/stop66/omp_empty_probe.out), which the in-process
    protocol never charges. The calibration measures it with threads asleep beside its stand-ins and
    takes it off each call per thread beyond the stand-ins' (evaluator 24). The same serial work,
    with and without an idle worker, called in turns in two children given 2 cores: the worker's
    kernel is never charged less than the other by more than noise (a kernel gains nothing by
    starting threads to sleep), and where the worker costs over 10 us the credit takes off at least
    a quarter of it (before 24, none; 8 pairs of children: 19-56 us of cost, -14 to +31 left,
    results/stop66/idle_credit_probe.out)."""
    built = [unguarded.compile(get_task("rmsnorm"), source, cpu_target)
             for source in (_WORK_BESIDE_AN_IDLE_WORKER, _SERIAL_WORK + "void kernel(void) { work(); }\n")]  # fmt: skip
    assert all(b.ok and b.artifact for b in built), [b.diagnosis for b in built]
    with contextlib.ExitStack() as stack:
        children = [
            stack.enter_context(_calibrated_and_loaded(b.artifact, small=True, threads=2)) for b in built
        ]
        for server, deadline, _ in children:
            server.call(deadline)  # the first: the team starts
        credited: list[list[int]] = [[], []]  # the figures the verdict uses
        uncredited: list[list[int]] = [[], []]  # less the overhead of a tree without idle threads
        threads = [0, 0]
        for _ in range(31):
            for k, (server, deadline, calibrated) in enumerate(children):
                ns, _ = server.call(deadline)
                threads[k] = server.call_threads
                credited[k].append(calibrated.off(ns, server.wall_bound, server.call_threads))
                uncredited[k].append(calibrated.off(ns, server.wall_bound, calibrated.threads))
    assert threads[0] == threads[1] + 1 and children[0][2].idle_threads == 1, (threads, children[0][2])
    cost = statistics.median(uncredited[0]) - statistics.median(uncredited[1])  # what the idle worker adds
    left = statistics.median(credited[0]) - statistics.median(credited[1])  # what the credit leaves of it
    calibrated = children[0][2]
    assert left > -(10_000 + 0.5 * max(cost, 0)), (left, cost, calibrated)
    if cost > 10_000:
        assert left < 0.75 * cost, (left, cost, calibrated)


def test_the_stand_ins_calibrate_with_the_counter_as_the_kernels_calls_have_it(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A timed kernel's process has the time-stamp counter off, and every switch into or out of it
    then costs the CPU a write of CR4 (a VM exit under KVM: 15-17 us more per call of an empty
    kernel on stop 65's AMD host, results/stop65/tsc_probe.out). The stand-ins that calibrate the
    overhead taken off each call run with it off too, and say so in each answer; a child whose
    stand-ins ran in another state than the evaluator asked for its calls is refused, as its
    calibration would not be the calls' (before evaluator 23 the counter went off only at load)."""
    built = unguarded.compile(get_task("rmsnorm"), "void kernel(void) {}\n", cpu_target)
    assert built.ok and built.artifact, built.diagnosis
    stand_ins: list[bytes] = []
    call = KernelServer._call

    def counted(server: KernelServer, deadline: float, command: bytes) -> tuple[int, int]:
        if command in isolated.STAND_INS:
            stand_ins.append(command)
        return call(server, deadline, command)

    monkeypatch.setattr(KernelServer, "_call", counted)
    with _calibrated_and_loaded(built.artifact, small=True, threads=1) as (server, deadline, _):
        assert server.hides_clocks == 1
        server.call(deadline)
    assert stand_ins, "no stand-in answered: the calibration's answers were not read"  # each one checked

    # The control: the child told to keep its counter on, the evaluator expecting it off.
    started = KernelServer.__init__

    def expecting_it_off(server: KernelServer, *args: Any, **kwargs: Any) -> None:
        started(server, *args, **kwargs)
        server.hides_clocks = 1

    monkeypatch.setattr(isolated, "CLOCKLESS_KERNELS", False)
    monkeypatch.setattr(KernelServer, "__init__", expecting_it_off)
    with (
        pytest.raises(isolated.ProtocolError, match="time-stamp counter in another state"),
        _calibrated_and_loaded(built.artifact, small=True, threads=1),
    ):
        pass


# What tests/agent/red_team/read_the_clock.c tries, in the order of its record (y[k]).
CLOCK_CHANNELS = (
    "rdtsc", "rdtscp", "clock_gettime through the vDSO", "time() through the vDSO (no counter)",
    "a coarse clock through the vDSO (no counter)", "clock_gettime as a system call", "times",
    "sysinfo's uptime", "getrusage", "a file's times (fstat on its descriptors)", "/proc/uptime",
    "/proc/self/fd's links", "a futex wait until a date", "a sleep until a date", "omp_get_wtime",
    "reading the vDSO", "rdtsc in a thread started after",
)  # fmt: skip
_DUMP_AT, _DUMP_BYTES = 64, (64 + 32) << 10  # read_the_clock.c KG_DUMP_AT, KG_BELOW + KG_ABOVE
_DATA_AT = _DUMP_AT * 4 + _DUMP_BYTES  # read_the_clock.c KG_DATA_AT, in bytes


def _time_stamp_counter() -> Callable[[], int]:
    """rdtsc, for the test's own process: four instructions in a page of their own."""
    code = bytes.fromhex("0f31 48c1e220 4809d0 c3")  # rdtsc; shl rdx, 32; or rax, rdx; ret
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    read = ctypes.CFUNCTYPE(ctypes.c_uint64)(ctypes.addressof(ctypes.c_char.from_buffer(page)))

    def counter() -> int:
        assert not page.closed  # held by this closure: the code stays mapped while it can be called
        return int(read())

    return counter


def _read_the_clock(unguarded: CBackend, cpu_target: Target) -> tuple[dict[str, float], dict[str, list[int]]]:
    """One call of read_the_clock.c in the isolated protocol's child, after the stand-ins the
    evaluator calibrates with (which read the monotonic clock): what each channel gave (1 the time,
    0 refused, 2 a fault), and the readings found in the kernel's reach, by clock: the monotonic
    clock's and the date's in nanoseconds and the time-stamp counter's, on its stack and in the
    loaded objects' data (the same boot clock for the test and the child: no time namespace)."""
    built = unguarded.compile(get_task("rmsnorm"), (RED_TEAM / "read_the_clock.c").read_text(), cpu_target)
    assert built.ok and built.artifact, built.diagnosis
    counter = _time_stamp_counter()
    since = (time.monotonic_ns(), time.time_ns(), counter())
    # the full size: room in y for the stack and the data
    with _calibrated_and_loaded(built.artifact, small=False, threads=2) as (server, deadline, _):
        server.call(deadline)
        y = server.outputs[0].reshape(-1).copy()
    until = (time.monotonic_ns(), time.time_ns(), counter())
    raw = y.view(np.uint8)
    data = raw[_DATA_AT:]
    count = int(np.frombuffer(data[:8].tobytes(), dtype=np.uint64)[0])
    words = np.concatenate([
        np.frombuffer(raw[_DUMP_AT * 4 : _DUMP_AT * 4 + _DUMP_BYTES].tobytes(), dtype=np.uint64),
        np.frombuffer(data[8 : 8 + 8 * count].tobytes(), dtype=np.uint64),
    ])  # fmt: skip
    readings = {
        clock: [int(w) for w in words[(words >= low) & (words <= high)]]
        for clock, low, high in zip(("monotonic", "date", "counter"), since, until, strict=True)
    }
    return dict(zip(CLOCK_CHANNELS, (float(v) for v in y[: len(CLOCK_CHANNELS)]), strict=True)), readings


def test_a_timed_kernel_has_no_clock(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a clock a kernel knows its age (the model can write the date into its source): a parent
    could run honest while new, when its figure over the baseline is set, and slower ever after,
    its copies kept (the fourteenth adversary's stale figure, docs/sandbox.md). In the isolated
    protocol's child no way read_the_clock.c tries gives it the time: the time-stamp counter faults
    (in threads started later too), the vDSO is gone, the system calls and files that carry the time
    are refused, and nothing in its reach holds a reading of a clock: not its stack (the evaluator's
    stand-ins read the monotonic clock before the kernel is loaded), not the loaded objects' data
    (glibc's loader keeps its reading of the counter as the process started). Control, the clocks
    left to the kernel: every way gives it the time, the monotonic reading it leaves on its stack is
    found, and so is the loader's reading of the counter."""
    seen, readings = _read_the_clock(unguarded, cpu_target)
    assert all(v in (0.0, 2.0) for v in seen.values()), [k for k, v in seen.items() if v not in (0.0, 2.0)]
    assert not any(readings.values()), {clock: [hex(r) for r in found] for clock, found in readings.items()}
    _clocks_left_to_the_kernel(monkeypatch)
    seen, readings = _read_the_clock(unguarded, cpu_target)
    assert all(v == 1.0 for v in seen.values()), [k for k, v in seen.items() if v != 1.0]
    assert readings["monotonic"], "the reading the kernel left on its stack was not found"
    assert readings["counter"], "the loader's reading of the counter was not found"


def test_what_the_child_forgets_tells_a_kernel_nothing(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The timed child zeroes every reading of a clock in the memory it writes, the loader's included
    (`test_a_timed_kernel_has_no_clock`). The fifteenth adversary made that scan its clock: a grid of
    dates in the kernel's own data, the zeroed ones the date, so a parent knew its age again (kept
    6 of 6 at 1.40-1.42x against its copy, results/redteam-stop54). The child scans before it loads
    the kernel: dates_in_its_data.c finds its grid whole, in its writable data and in what is made
    read-only after relocation. Control, the scan after the kernel is loaded (stop 54's first
    order): words of both grids are zeroed."""
    now = int(time.time())
    dates = range(now - 60, now + 600)
    source = (
        f"#define KG_GRID {', '.join(map(str, dates))}\n" + (RED_TEAM / "dates_in_its_data.c").read_text()
    )
    built = unguarded.compile(get_task("rmsnorm"), source, cpu_target)
    assert built.ok and built.artifact, built.diagnosis

    def zeroed() -> tuple[float, float]:
        with _calibrated_and_loaded(built.artifact, small=True, threads=1) as (server, deadline, _):
            server.call(deadline)
            y = server.outputs[0].reshape(-1)
            assert y[2] == len(dates), y[:3]
            return float(y[0]), float(y[1])

    assert zeroed() == (0.0, 0.0)
    monkeypatch.setattr(isolated, "FORGET_AFTER_LOAD", True)
    writable, read_only = zeroed()
    assert writable > 0 and read_only > 0, (writable, read_only)


def test_a_kernel_cannot_count_the_threads_of_another(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sixteenth adversary's channel (results/redteam-stop54b): threads are counted per uid, and
    both kernels' processes ran under one, so a parent could tell a later copy of itself beside it
    from how many threads it could start, with no clock (kept 5 of 5 at up to 1.34x; 4 of 4 through
    the loop's rules with a figure set low). Each sandboxed step now has a uid of its own
    (`bubblewrap.STEP_UIDS`): count_the_threads.c starts as many threads with 300 held by another
    kernel's process as without. Control, one uid for every step: about 300 fewer."""
    task = get_task("rmsnorm")
    probe = (RED_TEAM / "count_the_threads.c").read_text()
    counter, holder = (
        unguarded.compile(task, prefix + probe, cpu_target) for prefix in ("", "#define KG_HOLD 300\n")
    )
    assert counter.ok and counter.artifact and holder.ok and holder.artifact, (
        counter.diagnosis,
        holder.diagnosis,
    )

    def started(server: KernelServer, deadline: float) -> int:
        server.call(deadline)
        return int(server.outputs[0].reshape(-1)[0])

    def alone_and_beside() -> tuple[int, int]:
        with _calibrated_and_loaded(counter.artifact, small=True, threads=1) as (count, deadline, _):
            alone = started(count, deadline)
            with _calibrated_and_loaded(holder.artifact, small=True, threads=1) as (hold, hold_deadline, _):
                assert started(hold, hold_deadline) == 300
                return alone, started(count, deadline)

    alone, beside = alone_and_beside()
    assert alone > 300 and beside == alone, (alone, beside)
    monkeypatch.setattr(bubblewrap, "STEP_UIDS", False)
    alone, beside = alone_and_beside()
    assert alone > 300 and beside <= alone - 290, (alone, beside)


# The auxiliary vector's keys (elf.h) named in the test's messages.
_AUX_NAMES = {3: "AT_PHDR", 6: "AT_PAGESZ", 7: "AT_BASE", 11: "AT_UID", 12: "AT_EUID", 13: "AT_GID",
              14: "AT_EGID", 16: "AT_HWCAP", 25: "AT_RANDOM", 31: "AT_EXECFN", 33: "AT_SYSINFO_EHDR"}  # fmt: skip
STARTS = 10  # a value drawn afresh each start is in order over all of them once in 10!/2 (1.8e6)


def _what_it_starts_with(artifact: str) -> dict[str, int]:
    """What what_it_starts_with.c read in one call of a fresh isolated child: each auxiliary vector
    entry's value by name, and the CPUs it may run on ("cpus")."""
    with _calibrated_and_loaded(artifact, small=True, threads=1) as (server, deadline, _):
        server.call(deadline)
        words = server.outputs[0].reshape(-1).view(np.uint64).copy()
    pairs = int(words[0])
    assert 10 <= pairs <= 64, pairs
    seen = {
        _AUX_NAMES.get(int(k), f"aux{int(k)}"): int(v) for k, v in words[1 : 1 + 2 * pairs].reshape(-1, 2)
    }
    return {**seen, "cpus": int(words[1 + 2 * pairs])}


def test_nothing_a_timed_kernel_starts_with_counts_the_steps(
    unguarded: CBackend, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the seventeenth adversary (results/redteam-stop55): each step's uid was 2^30 plus the
    evaluator's process id times 256 plus a count of its steps, and a process reads its uid with no
    system call (the auxiliary vector), so a kernel knew its age in steps: honest while young, slow
    as the parent of its copies (kept 4 of 4 at 1.35-1.37x). The class: whatever a timed process is
    handed as it starts must be the same at every start or drawn afresh, never a function of the
    evaluator's history. Over STARTS fresh children, what_it_starts_with.c finds no value of its
    auxiliary vector or CPU mask that differs at every start and is in order (rising or falling);
    the uids differ at every start, in no order. Control, a count of steps as the uid: AT_UID rises
    with every start."""
    built = unguarded.compile(
        get_task("rmsnorm"), (RED_TEAM / "what_it_starts_with.c").read_text(), cpu_target
    )
    assert built.ok and built.artifact, built.diagnosis

    def in_order() -> tuple[list[str], dict[str, list[int]]]:
        starts = [_what_it_starts_with(built.artifact) for _ in range(STARTS)]
        values = {key: [start.get(key, -1) for start in starts] for key in starts[0]}
        ordered = [
            key for key, seen in values.items()
            if len(set(seen)) == STARTS and seen in (sorted(seen), sorted(seen, reverse=True))
        ]  # fmt: skip
        return ordered, values

    ordered, values = in_order()
    assert not ordered, {key: values[key] for key in ordered}
    assert len(set(values["AT_UID"])) == STARTS, values["AT_UID"]  # drawn: changes, in no order
    steps = itertools.count()
    monkeypatch.setattr(bubblewrap, "step_uid", lambda: (1 << 30) + next(steps))
    ordered, values = in_order()
    assert "AT_UID" in ordered, values["AT_UID"]


def test_a_parent_cannot_run_slower_once_it_is_old(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """knows_its_age.c was born a day ago (the model wrote the date into it) and does 40% of its rows
    twice once it is an hour old; its copy, born now, is the same code. Guarded: neither can read
    the date, both run as new, and the copy is not kept against its parent. Control, the clocks left
    to them: the old parent is slow and its copy is kept as faster than itself (the parent mark, not
    given here, would refuse a parent 40% over it; one 10% slower it lets through)."""
    backend = _isolated_past_admission(tmp_path_factory, "rt-age")
    task, target = get_task("rmsnorm"), _no_peaks(cpu_target)
    source = (RED_TEAM / "knows_its_age.c").read_text()
    now = int(time.time())
    parent, copy = (f"#define KG_BORN {born}L\n{source}" for born in (now - 86400, now))
    guarded = judged(lambda: evaluate(task, backend, target, copy, parent))
    assert guarded.outcome == Outcome.DISCARDED and paired_gain(guarded) < 1.1, guarded
    _clocks_left_to_the_kernel(monkeypatch)
    control = when_the_host_was_quiet(lambda: evaluate(task, backend, target, copy, parent))
    assert control.outcome == Outcome.KEPT and (control.speedup or 0) > 1.2, (control.speedup, control.reason)


_BUSY_FOR_2_MS = r"""
#include <time.h>
static long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}
void kernel(void) {
    long end = now() + 2000000;
    #pragma omp parallel num_threads(THREADS)
    while (now() < end) {
    }
}
"""


@pytest.mark.parametrize("threads", [1, 2])
def test_a_call_loses_the_overhead_of_the_clock_it_is_timed_by(
    unguarded: CBackend, cpu_target: Target, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A serial kernel is timed by its CPU time, a parallel one by its wall time, which also holds the
    hand-over's latencies: each loses the overhead its own clock was measured to carry (a serial and
    a parallel stand-in), so a kernel busy for 2 ms on one core or on two is charged about 2 ms,
    never the latencies (evaluator version 4 charged the parallel one 150-180 us more) and never
    less than its own work."""
    _clocks_left_to_the_kernel(monkeypatch)  # busy for 2 ms by the clock
    task = get_task("rmsnorm")
    built = unguarded.compile(task, _BUSY_FOR_2_MS.replace("THREADS", str(threads)), cpu_target)
    assert built.ok and built.artifact, built.diagnosis

    def fifteen_calls() -> tuple[isolated.CallOverhead, list[int], int]:
        """15 calls beside which no other task ran (`ran_beside`, as the evaluator counts pairs): their
        charges and how many were timed by the wall clock."""
        with _calibrated_and_loaded(built.artifact, small=True, threads=2) as (server, deadline, overhead):
            charged: list[int] = []
            by_wall = 0
            while len(charged) < 15:
                elapsed, wall = server.call(deadline)
                if not isolated.ran_beside(server.call_others_ns, wall):
                    charged.append(overhead.off(elapsed, server.wall_bound))
                    by_wall += server.wall_bound
        return overhead, charged, by_wall

    # Timed by the wall clock when both cores were busy, by the CPU time when one was: most calls. A
    # parallel call whose second thread found no free core (other processes' load, or a virtual CPU
    # the hypervisor took: 9 of 15 wall-bound in the stop-44 CI run, 3 of 15 in a suite of stop 46's,
    # 15 of 15 in five runs after it) is rightly timed by its CPU time, which is then under its wall
    # time: such a run is measured again (at most twice). A serial call read as wall-bound (1 of 15,
    # once in 12 runs here) loses the wall clock's overhead, measured with every core busy, not its
    # CPU clock's.
    for _ in range(3):
        overhead, charged, by_wall = fifteen_calls()
        if threads == 1 or by_wall > 7:
            break
    assert by_wall > 7 if threads > 1 else by_wall <= 2, by_wall
    assert 0 < overhead.cpu_ns < 5_000_000 and 0 < overhead.wall_ns < 5_000_000
    assert 1_900_000 <= sorted(charged)[7] <= 2_600_000, (overhead, sorted(charged))


def test_threads_taking_turns_on_serial_work_are_charged_all_of_it(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the stop-26 adversary (results/redteam-stop26/a01-a03: kept at 1.94-1.97x on
    reduction, prefix_scan and layernorm): the baseline's serial scan handed from one OpenMP thread
    to the other at the midpoint, the idle one asleep. Each thread's CPU total is half the work, so
    the critical path of the totals (the most any thread ran, or all of them over the cores) is
    half the call. The wall-capped clock adds the threads' CPU times and caps the sum only by the
    wall time, so the relay is charged all of it; the control, stop 25's rule, keeps it."""
    plan = TimingPlan(warmup=1, min_trials=8, max_trials=12, budget_s=6.0, protocol=ISOLATED)
    backend = _PastAdmissionC(cache_dir=tmp_path_factory.mktemp("rt-relay"), check_timeout_s=10.0,
                              memory_bytes=768 << 20, counters=False, timing=plan)  # fmt: skip
    task = get_task("prefix_scan")
    baseline, relay = task.source("c", task.baseline_config), (RED_TEAM / "relay.c").read_text()

    def relay_against_baseline() -> Evaluation:
        # The relay (two threads) is a comparison judged only on free cores; beside a busy suite (CI,
        # stop 62: 9 of 17 pairs crowded) it may not be, which says nothing of the clock.
        return evaluate(task, backend, _no_peaks(cpu_target), relay, baseline)

    verdict = judged(relay_against_baseline)
    assert verdict.outcome in {Outcome.KEPT, Outcome.DISCARDED}, verdict.reason
    assert paired_gain(verdict) < 1.15, verdict
    monkeypatch.setattr(isolated, "WALL_CAPPED_CLOCK", False)
    control = judged(relay_against_baseline)
    assert control.outcome == Outcome.KEPT, control.reason
    assert control.speedup is not None and control.speedup > 1.5, control.speedup


def test_a_kernel_cannot_predict_the_inputs_of_the_calls_to_come(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the stop-29 adversary (results/redteam-stop29): when call k's inputs were the base
    scaled by `factors[k : k + size]`, calls 0 and 1 gave away every later call's inputs; the kernel
    computed the outputs of the next 64 calls in the untimed warm-up call 1 (its table's address kept
    in the stagger gap between two shared arrays, where no symbol rule looks) and served each timed
    call from it, every output right. Its parent is the same kernel, never served from its table.
    With each array's window at an offset the evaluator draws, the prediction never matches and the
    kernel is its parent's loop; the control, with the window at the call's number, is kept with a
    fake speedup."""
    plan = TimingPlan(warmup=3, min_trials=10, max_trials=20, budget_s=8.0, protocol=ISOLATED)
    backend = CBackend(cache_dir=tmp_path_factory.mktemp("rt-predict"), check_timeout_s=10.0,
                       memory_bytes=768 << 20, counters=False, timing=plan)  # fmt: skip
    task = get_task("matvec")
    source = (RED_TEAM / "predict_variants.c").read_text()
    # The parent: the same code, whose check of the prediction never passes, so it is never served
    # from its table. The check is one the compiler cannot fold (|d| < -|want|): folded (`< 0.0f`),
    # the table's code went and the loop around it moved, 1.007x here and 1.23x on CI's host at stop
    # 52; unfolded, the two objects differ by one constant (0.998-1.000x, results/stop53).
    honest = source.replace("<= 3e-5f * fabsf(want)", "< -fabsf(want)")
    assert honest != source
    verdict = judged(lambda: evaluate(task, backend, _no_peaks(cpu_target), source, honest))
    # No fake speedup, where the attack reads over 2x (the control below).
    assert verdict.outcome in {Outcome.KEPT, Outcome.DISCARDED}, (verdict.outcome, verdict.reason)
    assert paired_gain(verdict) < 1.1, verdict
    monkeypatch.setattr(isolated, "RANDOM_VARIANT_OFFSETS", False)
    control = judged(lambda: evaluate(task, backend, _no_peaks(cpu_target), source, honest))
    assert control.outcome == Outcome.KEPT and (control.speedup or 0) > 2.0, (control.outcome, control.reason)


@contextlib.contextmanager
def _cpu_hogs(per_cpu: int = 0) -> Iterator[None]:
    """Processes that always want a core: one fewer than this process may use (no two are free), or
    `per_cpu` on each of them."""
    cpus = len(os.sched_getaffinity(0))
    hogs = [
        subprocess.Popen(["python3", "-c", "while True: pass"])
        for _ in range(per_cpu * cpus if per_cpu else cpus - 1)
    ]
    try:
        time.sleep(0.5)
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _serial_and_parallel_layernorm() -> tuple[str, str]:
    """The stop-29 adversary's honest serial layernorm, and the same code under `omp parallel for`
    (faster on two free cores: timed by the CPU clock and by the wall clock)."""
    serial = (RESULTS / "redteam-stop29" / "serial_vs_parallel_layernorm.c").read_text()
    loop = "    for (int i = 0; i < r; i++) {"
    parallel = serial.replace(loop, "#pragma omp parallel for schedule(static)\n" + loop, 1)
    assert parallel != serial
    return serial, parallel


def _serial_and_parallel_backend(tmp_path_factory: pytest.TempPathFactory, name: str) -> CBackend:
    """The isolated protocol at 20-40 pairs, admission on: what `_serial_and_parallel_layernorm`'s
    comparisons are timed with."""
    plan = TimingPlan(warmup=2, min_trials=20, max_trials=40, budget_s=4.0, protocol=ISOLATED)
    return CBackend(cache_dir=tmp_path_factory.mktemp(name), check_timeout_s=10.0, memory_bytes=768 << 20,
                    counters=False, timing=plan)  # fmt: skip


def test_a_comparison_is_judged_only_on_free_cores(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by running the stop-29 adversary's third attack (results/redteam-stop29/attack3-load):
    an honest serial layernorm against the same code under `omp parallel for`, slower on two free
    cores, was kept in 16 of 16 runs beside CPU hogs. With no free core the parallel parent is
    charged its threads' CPU times added up, the serial candidate none of its waits. A pair of calls
    counts only when no other task was runnable beyond the cores the kernels leave free: beside the
    hogs no pair counts and the run is not judged; quiet, it is judged (and slower). Every pair is
    held to it, whatever its kernels did: the stop-41 adversary's copy of its parent that spins a
    second thread on its slow calls (results/redteam-stop41) had those pairs dropped when only pairs
    with two busy threads were tested, and was kept beside a hog; now it is not judged beside the
    hogs and not kept quiet. The control, the rule off (and the parent's threads free on the pair's
    CPUs, as before evaluator 15), judges the parallel comparison beside the hogs, and the serial
    candidate reads as the faster."""
    if (cpu_target.cores or 1) < 2 or len(os.sched_getaffinity(0)) < 2:  # CI's machine has two: it runs there
        unavailable("two CPUs are needed to compare a serial and a parallel kernel")
    _clocks_left_to_the_kernel(monkeypatch)  # the veto times its own calls
    backend = _serial_and_parallel_backend(tmp_path_factory, "rt-free-cores")
    target = _no_peaks(cpu_target)
    layernorm, matvec = get_task("layernorm"), get_task("matvec")
    serial, parallel = _serial_and_parallel_layernorm()
    veto, its_parent = ((RESULTS / "redteam-stop41" / f"veto_slow_calls_matvec{end}.c").read_text()
                        for end in ("", "_parent"))  # fmt: skip
    quiet = when_the_host_was_quiet(lambda: evaluate(layernorm, backend, target, serial, parallel))
    for _ in range(2):  # judged quiet, the parallel parent read 1.3-1.6x *slower* in 2 of 11 runs at
        if quiet.outcome == Outcome.DISCARDED and (quiet.speedup or 2) < 1.0:  # stop 48 (0.1-0.3% steal;
            break  # its usual 0.59-0.73x): a second vCPU slow to answer that the guest does not see
        quiet = when_the_host_was_quiet(lambda: evaluate(layernorm, backend, target, serial, parallel))
    assert quiet.outcome == Outcome.DISCARDED and (quiet.speedup or 2) < 1.0, (quiet.speedup, quiet.reason)
    vetoing_quiet = evaluate(matvec, backend, target, veto, its_parent)  # once: a host just seen quiet
    assert vetoing_quiet.judged and vetoing_quiet.outcome == Outcome.DISCARDED, vetoing_quiet.reason
    with _cpu_hogs():
        loaded = evaluate(layernorm, backend, target, serial, parallel)
        vetoing = evaluate(matvec, backend, target, veto, its_parent)
    for verdict in (loaded, vetoing):
        assert verdict.outcome == Outcome.DISCARDED and not verdict.judged, (verdict.outcome, verdict.reason)
        assert verdict.speedup is None and "not judged" in verdict.reason, verdict.reason
    # A faster reading than the parent's is the fake the rule stops, whether or not the keep
    # decision's interval clears its bar: one hog gave it in 6 of 6 runs before evaluator 15 (1.06-1.09x,
    # the parent's two threads on one CPU). With each thread on a CPU of its own, a thread woken for
    # a short call mostly runs before the hog: one hog gave it in 1 of 6 (once kept at 1.85x), two a
    # CPU in 5 of 6, and none in three tries of a suite (results/stop50/free_cores_control.log).
    # So the control shows the attack as it was found: the rule off, and the threads free on the
    # pair's CPUs (`ONE_CPU_PER_THREAD`), up to five times (three were too few once at evaluator 20,
    # in a suite under load 2.7-3: the serial candidate read 0.996x and below; results/stop61), beside
    # two hogs a CPU: since evaluator 24 the parallel parent is no longer charged its idle worker's
    # stop and continue (10-35 us a call), part of what one hog showed, and with one the control read
    # 0.96-0.98x in 2 of 3 runs alone and in a full suite (stop 66); with two a CPU, 4 of 4 faster.
    monkeypatch.setattr(isolated, "QUIET_PAIRS", False)
    monkeypatch.setattr(isolated, "ONE_CPU_PER_THREAD", False)
    controls: list[Evaluation] = []
    with _cpu_hogs(per_cpu=2):
        while len(controls) < 5 and not any((c.speedup or 0) > 1.0 for c in controls):
            controls.append(evaluate(layernorm, backend, target, serial, parallel))
    assert any((c.speedup or 0) > 1.0 for c in controls), [(c.outcome, c.speedup, c.reason) for c in controls]


@pytest.mark.parametrize(
    ("runnable", "cores", "cpus", "crowded"),
    [
        ([1, 1, 1], 2, 2, False),  # only the evaluator's own reading ran
        ([1, 2, 1], 2, 2, True),  # another task wanted one of the two cores
        ([2, 2, 2], 1, 2, False),  # a one-core target on two CPUs: one other task leaves it its core
        ([3, 1, 1], 1, 2, True),
        ([5, 5, 5], 2, 16, False),  # four others on a 16-CPU host leave the kernels their two cores
        ([16, 1, 1], 2, 16, True),
    ],
)
def test_a_pair_is_crowded_when_another_task_could_take_a_core_the_kernels_are_given(
    runnable: list[int], cores: int, cpus: int, crowded: bool
) -> None:
    assert isolated.crowded(runnable, cores, cpus) is crowded


def test_stolen_time_is_read_from_the_steal_column_of_the_cpus_given() -> None:
    stat = "cpu  10 0 5 100 0 0 0 7 0 0\ncpu0 5 0 2 50 0 0 0 3 0 0\ncpu1 5 0 3 50 0 0 0 4 0 0\nintr 1 2\n"
    assert isolated.cpu_jiffies(stat, {0}) == (3, 60)
    assert isolated.cpu_jiffies(stat, {0, 1}) == (7, 122)  # the summary line "cpu" is not a CPU
    assert isolated.cpu_jiffies(stat) == (7, 122)  # the whole machine: the summary line
    assert isolated.cpu_jiffies("cpu0 5 0 2 50 0 0 0\n", {0}) == (0, 57)  # a kernel that reports no steal


def test_a_comparison_with_a_parallel_kernel_is_not_judged_while_the_hypervisor_takes_the_cpus(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Time a hypervisor takes from a virtual CPU is seen by no count of runnable tasks, and it slows
    a parallel kernel's wall time, not a serial kernel's CPU time (`STOLEN_SHARE_MAX`). Steal cannot
    be made on demand, so the steal column is replaced by one that grows at half the CPUs' time:
    serial layernorm against its parallel parent is then not judged, and the reason names the
    steal; with the real column (on a host quiet enough to judge) it is judged. The parallel kernel
    against itself is not judged under it either (under steal its calls may be charged their summed
    CPU time, the stop-46 adversary's case against version 12's rule); two serial kernels are
    charged what steal does not grow, and their comparison is judged under it."""
    if (cpu_target.cores or 1) < 2 or len(os.sched_getaffinity(0)) < 2:
        unavailable("a comparison is judged only where the kernels' two cores are free")
    backend = _serial_and_parallel_backend(tmp_path_factory, "rt-steal")
    target = _no_peaks(cpu_target)
    layernorm, rmsnorm = get_task("layernorm"), get_task("rmsnorm")
    serial, parallel = _serial_and_parallel_layernorm()
    baseline = rmsnorm.source("c", rmsnorm.baseline_config)
    quiet = when_the_host_was_quiet(lambda: evaluate(layernorm, backend, target, serial, parallel))
    assert quiet.judged, quiet.reason
    tick_ns, reads = 1_000_000_000 // os.sysconf("SC_CLK_TCK"), itertools.count()
    # half of every CPU's time, and the tick of rounding allowed per CPU at each reading: a short run's
    # share is half however few ticks it lasted
    monkeypatch.setattr(
        isolated, "stolen_ns", lambda cpus: len(cpus) * (time.perf_counter_ns() // 2 + next(reads) * tick_ns)
    )
    crowded = "another task wanted"  # the load rule's refusal, not the steal rule's
    stolen = when_the_host_was_quiet(lambda: evaluate(layernorm, backend, target, serial, parallel), crowded)
    assert stolen.outcome == Outcome.DISCARDED and not stolen.judged, (stolen.outcome, stolen.reason)
    assert stolen.speedup is None and re.search(r"the hypervisor took (49|50)\.\d%", stolen.reason), (
        stolen.reason
    )
    both_parallel = when_the_host_was_quiet(
        lambda: evaluate(layernorm, backend, target, parallel, parallel), crowded
    )
    assert not both_parallel.judged and "the hypervisor took" in both_parallel.reason, both_parallel.reason
    serial_only = when_the_host_was_quiet(lambda: evaluate(rmsnorm, backend, target, baseline, baseline))
    assert serial_only.judged, serial_only.reason


def test_the_host_cpu_time_holds_what_another_process_runs() -> None:
    """`host_cpu_ns` is every task's CPU time (the root cgroup-v1 cpuacct): another process busy for
    60 ms of CPU is in it. Skipped where the machine has none (the runnable samples then decide
    alone); not an install step, so not a failure on CI."""
    before = isolated.host_cpu_ns()
    if before is None:
        pytest.skip("no root cgroup-v1 cpuacct here: a pair is judged by the runnable samples alone")
    busy = "import time\nend = time.process_time() + 0.06\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", busy], check=True)
    after = isolated.host_cpu_ns()
    assert after is not None and after - before >= 60_000_000


def test_a_pair_beside_which_another_task_ran_is_not_counted(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runnable samples are taken between calls, so load inside a call is not in them (bursts of
    it moved serial layernorm against its parallel parent from 0.62-0.72x to up to 1.04x:
    results/stop46-host/rule-off.log). Here the samples see nothing (their rule is replaced), and a
    process busy 1 ms in every 3 is seen by what every task ran over each call less the kernels' and
    the evaluator's (`ran_beside`): the comparison is not judged, and the reason says so. The
    control, with no limit on it: the same comparison beside the same process is judged. (A process
    that never sleeps is the samples' to see: the root figure takes a running task's time in at the
    scheduler's ticks, so over a call of a millisecond or two it may not grow at all.)"""
    if (cpu_target.cores or 1) < 2 or len(os.sched_getaffinity(0)) < 2:
        unavailable("a comparison is judged only where the kernels' two cores are free")
    if isolated.host_cpu_ns() is None:
        pytest.skip("no root cgroup-v1 cpuacct here: a pair is judged by the runnable samples alone")
    backend = _serial_and_parallel_backend(tmp_path_factory, "rt-beside")
    target = _no_peaks(cpu_target)
    layernorm = get_task("layernorm")
    serial, parallel = _serial_and_parallel_layernorm()
    monkeypatch.setattr(isolated, "crowded", lambda runnable, cores, cpus: False)
    monkeypatch.setattr(isolated, "CROWDED_WAIT_MAX_S", 0.05)  # the waits for a burst to pass: not the point
    bursts = "import time\nwhile True:\n    end = time.monotonic() + 0.001\n    while time.monotonic() < end: pass\n    time.sleep(0.002)"
    hog = subprocess.Popen([sys.executable, "-c", bursts])
    try:
        time.sleep(0.2)
        beside = evaluate(layernorm, backend, target, serial, parallel)
        monkeypatch.setattr(isolated, "OTHERS_CPU_ALLOWED_NS", float("inf"))
        unseen = when_the_host_was_quiet(lambda: evaluate(layernorm, backend, target, serial, parallel))
    finally:
        hog.kill()
        hog.wait()
    assert beside.outcome == Outcome.DISCARDED and not beside.judged, (beside.outcome, beside.reason)
    assert re.search(r"ran beside a call \((2\d|3\d|4\d) pairs\)", beside.reason), beside.reason
    assert unseen.judged, unseen.reason


def test_a_pair_is_not_counted_when_the_host_figure_says_others_ran_beside_it(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule of `ran_beside` on any host, cgroup v1 or not: the machine's CPU figure replaced by one
    that grows a second at every reading, so that others ran far more than the allowance beside each
    call. Serial layernorm against its parallel parent is not judged, naming the pairs; two serial
    kernels under the same figure are judged (a serial kernel is charged its CPU time, which others'
    work does not grow)."""
    if (cpu_target.cores or 1) < 2 or len(os.sched_getaffinity(0)) < 2:
        unavailable("a comparison is judged only where the kernels' two cores are free")
    backend = _serial_and_parallel_backend(tmp_path_factory, "rt-beside-fake")
    target = _no_peaks(cpu_target)
    layernorm, rmsnorm = get_task("layernorm"), get_task("rmsnorm")
    serial, parallel = _serial_and_parallel_layernorm()
    baseline = rmsnorm.source("c", rmsnorm.baseline_config)
    reads = itertools.count()
    # a second more at every reading: far beyond what this process and the sandboxes run over a call
    monkeypatch.setattr(isolated, "host_cpu_ns", lambda: next(reads) * 1_000_000_000)
    monkeypatch.setattr(isolated, "CROWDED_WAIT_MAX_S", 0.05)  # the waits for a burst to pass: not the point
    beside = evaluate(layernorm, backend, target, serial, parallel)
    assert not beside.judged and re.search(r"ran beside a call \((2\d|3\d|4\d) pairs\)", beside.reason), (
        beside.reason
    )
    serial_only = when_the_host_was_quiet(lambda: evaluate(rmsnorm, backend, target, baseline, baseline))
    assert serial_only.judged, serial_only.reason


def test_a_gain_against_a_parent_slower_than_its_code_was_timed_is_not_judged(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target
) -> None:
    """A parent's time is what its code chooses: the stop-44 adversary's parent spun 30% more in the
    runs its coin chose, and a copy of itself was kept against it at 1.3x (5 of 16). The loop gives
    `evaluate` the parent's mark, the fastest median its code was timed at in the run, and a gain
    against a parent slower than that by more than PARENT_SLOWDOWN_MAX is not judged. Here the
    parent is the same code doing 60% of its rows twice on every call, and its mark the median of
    its code without them: kept against it without the mark (the control), not judged with it. The
    mark is one run's median, not the loop's fastest of many: at 40% a slow control run (its median
    1.22x the next run's, CI at stop 52) set a mark the slowed parent stayed within."""
    backend = _isolated_past_admission(tmp_path_factory, "rt-slow-parent")
    task = get_task("rmsnorm")
    target = _no_peaks(cpu_target)
    honest = (RED_TEAM / "slow_parent.c").read_text()
    spinning = honest.replace("#define KG_SPIN_PCT 0", "#define KG_SPIN_PCT 60", 1)
    assert spinning != honest
    control = when_the_host_was_quiet(lambda: evaluate(task, backend, target, honest, spinning))
    assert control.outcome == Outcome.KEPT and (control.speedup or 0) > 1.2, (control.outcome, control.reason)
    assert control.profile is not None
    mark_ns = control.profile.median_ns  # the code without its spin, timed in the same run
    guarded = when_the_host_was_quiet(
        lambda: evaluate(task, backend, target, honest, spinning, parent_mark_ns=mark_ns)
    )
    assert guarded.outcome == Outcome.DISCARDED and not guarded.judged, (guarded.outcome, guarded.reason)
    assert "the parent ran" in guarded.reason and guarded.speedup is None, guarded.reason


def test_a_gain_over_a_model_written_parent_is_confirmed_against_the_baseline(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target
) -> None:
    """The ninth adversary (results/redteam-stop47): a family of identical kernels, each told by its
    child through the pages both map that it is the parent, spun up to 13% more as the parent, under
    the mark, and each generation was kept as 7-12% faster than the one before. Whatever the channel,
    that is a parent slower only as a parent: here the same code doing 30% of its rows twice (the mark, tested
    above, left out: this tests what holds under it). Control, no confirmation: kept against it.
    Guarded, the gain confirmed against the baseline (trusted code) in a comparison of its own: the
    candidate is no faster against the baseline than its parent's code was, and it is not kept."""
    backend = _isolated_past_admission(tmp_path_factory, "rt-confirm")
    task = get_task("rmsnorm")
    target = _no_peaks(cpu_target)
    baseline = task.source("c", task.baseline_config)
    honest = (RED_TEAM / "slow_parent.c").read_text()
    spinning = honest.replace("#define KG_SPIN_PCT 0", "#define KG_SPIN_PCT 30", 1)
    assert spinning != honest
    control = when_the_host_was_quiet(lambda: evaluate(task, backend, target, honest, spinning))
    assert control.outcome == Outcome.KEPT and (control.speedup or 0) > 1.15, (
        control.outcome,
        control.reason,
    )

    def confirmed() -> Evaluation:
        # The parent's code as the loop saw it when it was kept (timed against the baseline), just
        # before: a figure set minutes earlier in a slow period of the host is low, and a gain
        # against it can clear the bar (one suite of stop 54; the fourteenth adversary's stale
        # figure), which is the host's drift, not this rule.
        figure = evaluate(task, backend, target, honest, baseline)
        if figure.outcome != Outcome.KEPT or not figure.speedup:
            return figure  # the host's refusal is tried again; any other verdict fails below, with its reason
        return evaluate(task, backend, target, honest, spinning, baseline_source=baseline,
                        parent_over_baseline=figure.speedup)  # fmt: skip

    guarded = when_the_host_was_quiet(confirmed)
    assert guarded.outcome == Outcome.DISCARDED, (guarded.outcome, guarded.reason)
    # Refused by the bar, judged; or, where the host's speed moved between the parent's figure and
    # the confirmation enough to clear the bar (the honest code read 5.32x the baseline, 3.44x a
    # minute before, in a slow period of stop 50's host), by the third rule: the gain is not what
    # the candidate's speed against the baseline says, not judged.
    assert ("not confirmed against the baseline" in guarded.reason and guarded.judged) or (
        "by the two kernels' speeds over the baseline" in guarded.reason and not guarded.judged
    ), guarded.reason


class _Scripted:
    """A proposer that proposes the given sources in turn, as a model that wrote them would."""

    name = "scripted"

    def __init__(self, sources: list[str]) -> None:
        self.sources = iter(sources)

    def propose(self, context: object) -> Proposal | None:
        source = next(self.sources, None)
        return (
            None
            if source is None
            else Proposal(transform="llm", source=source, rationale="the next generation")
        )


class _NoGraph:
    """A client that stores nothing: what the loop keeps is what is tested here."""

    def upsert_targets(self, targets: object) -> list[str]:
        return []

    def record_attempt(self, attempt: object) -> RecordResult:
        ids = [uuid.uuid4().hex for _ in range(4)]
        return RecordResult(attempt_key="-", created=True, parent_kernel_id=ids[0], child_kernel_id=ids[1],
                            parent_measurement_id=ids[2], child_measurement_id=ids[3])  # fmt: skip


def test_a_figure_over_the_baseline_is_the_fastest_the_kernel_showed(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tenth adversary (results/redteam-stop48): a family of identical kernels that tell the
    baseline (trusted code) from their kin (the map counts of the shared inputs) and run slower
    against it by less in each generation (40%, 30%, 20%, 10%), each 13% slower as a parent: each gain over
    the parent cleared the confirmation, since the parent's figure over the baseline was what it chose.
    Through the loop, as the adversary ran it (the default timing plan). Control (stop 47's
    confirmation, `ANCHORED_FIGURES` off): the family chains, two or more generations kept (3 of 3
    steps in each of the adversary's runs; a second run where the first kept fewer: one of stop 49's
    suites). Guarded: a kernel's figure is the fastest it showed, so once one generation is kept no
    later one is: one step may be, over gen0, which never ran fast anywhere (by up to what gen0
    always hid: gen1, or gen3 where gen1 and gen2 were refused; docs/sandbox.md, "Tenth adversary").
    The control also has the parent mark off (`PARENT_SLOWDOWN_MAX`; the family stays under it on a
    quiet host): in a slow period of this host it refused parents 19-62% over their marks and left
    the control no chain to show (results/stop50/ladder_control.log). The guarded half has every
    rule on, as the product has: with the mark off too, the host's noise (a confirmation interval
    4.2-5.7x) once let gen3 through over a kept gen1."""
    _clocks_left_to_the_kernel(monkeypatch)  # the family spins on the time-stamp counter, reads /proc
    backend = _isolated_past_admission(tmp_path_factory, "rt-ladder", TimingPlan())
    task, target = get_task("rmsnorm"), _no_peaks(cpu_target)
    ladder = (RED_TEAM / "sandbag_ladder.c").read_text()
    family = [
        f"#define KG_GEN {gen}\n#define KG_SANDBAG_PCT {pct}\n{ladder}"
        for gen, pct in ((0, 40), (1, 30), (2, 20), (3, 10))
    ]

    def kept_generations() -> list[int]:
        result = optimize(task, backend, target, _Scripted(family), _NoGraph(), budget=len(family),  # type: ignore[arg-type]
                          final_check=False)  # fmt: skip
        assert result.steps[0].outcome == Outcome.KEPT, result.steps[0].diagnosis  # gen0, over the baseline
        return [s.step for s in result.steps[1:] if s.outcome == Outcome.KEPT]

    controls: list[list[int]] = []
    with monkeypatch.context() as off:
        off.setattr(loop, "ANCHORED_FIGURES", False)
        off.setattr(loop, "PARENT_SLOWDOWN_MAX", math.inf)
        for _ in range(2):  # the kernels' telling of the baseline misses at times: up to two runs
            controls.append(kept_generations())
            if len(controls[-1]) >= 2:
                break
    assert any(len(control) >= 2 for control in controls), controls
    guarded = kept_generations()
    assert len(guarded) <= 1, guarded


def _isolated_past_admission(
    tmp_path_factory: pytest.TempPathFactory, name: str, timing: TimingPlan = ATTACK_TIMING
) -> CBackend:
    """The isolated protocol behind a backend that admits everything: the timer alone must hold."""
    return _PastAdmissionC(cache_dir=tmp_path_factory.mktemp(name), check_timeout_s=10.0, memory_bytes=768 << 20,
                           counters=False, timing=dataclasses.replace(timing, protocol=ISOLATED))  # fmt: skip


def test_the_threads_recorded_are_the_most_a_kernel_ran_with(
    tmp_path_factory: pytest.TempPathFactory, cpu_target: Target
) -> None:
    """Found by the stop-41 adversary: the thread count stored with a measurement was read after the
    first call, so a kernel that starts its threads on a later call was recorded as serial."""
    backend = _isolated_past_admission(tmp_path_factory, "rt-threads")
    profile = backend.profile(
        get_task("rmsnorm"), (RED_TEAM / "threads_late.c").read_text(), _no_peaks(cpu_target)
    )
    assert profile.outcome == Outcome.KEPT, profile.reason
    assert profile.counters[CounterName.THREADS] == cpu_target.cores, profile.counters[CounterName.THREADS]


def _reported(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The `extra` of each isolated run's report, as the runs end."""
    reports: list[dict[str, Any]] = []
    run = isolated._run

    def recorded(*args: Any, **kwargs: Any) -> Any:
        report, verdict = run(*args, **kwargs)
        reports.append(report.extra)
        return report, verdict

    monkeypatch.setattr(isolated, "_run", recorded)
    return reports


def _placements(monkeypatch: pytest.MonkeyPatch) -> list[tuple[frozenset[int], list[frozenset[int]]]]:
    """Each placement of a kernel's process, as it is made: (the CPUs asked, each thread's CPUs after,
    by thread id)."""
    placements: list[tuple[frozenset[int], list[frozenset[int]]]] = []
    place = KernelServer.place

    def placed(server: KernelServer, cpus: frozenset[int]) -> None:
        place(server, cpus)
        tids = sorted(int(t.name) for t in Path(f"/proc/{server.kernel_pid()}/task").iterdir())
        placements.append((cpus, [frozenset(os.sched_getaffinity(tid)) for tid in tids]))

    monkeypatch.setattr(KernelServer, "place", placed)
    return placements


def test_each_thread_of_a_parallel_kernel_runs_on_a_cpu_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, cpu_target: Target
) -> None:
    """Left free on every CPU, a parallel kernel's threads often shared one CPU for a whole comparison
    (matmul's parallel config read 1.1-2.5 ms, 1.0-1.1 ms with one CPU each in 11 of 12 comparisons:
    results/stop49/pinning.log).
    Each thread of a kernel placed on several CPUs now runs on one of its own, in turn by thread id."""
    if len(os.sched_getaffinity(0)) < 2:  # CI's machine has two: it runs there
        unavailable("a kernel's threads can have a CPU each only where there are two: two CPUs are needed")
    placements = _placements(monkeypatch)
    task = get_task("rmsnorm")
    backend = _isolated_past_admission(tmp_path_factory, "rt-pinned")
    profile = backend.profile(task, task.source("c", dict(task.baseline_config, parallel=True)), cpu_target)
    assert profile.outcome == Outcome.KEPT, profile.reason
    parallel = [(asked, applied) for asked, applied in placements if len(applied) > 1]
    assert len(parallel) >= ATTACK_TIMING.min_trials, placements
    for asked, applied in parallel:
        cpus = sorted(asked)
        assert applied == [frozenset({cpus[i % len(cpus)]}) for i in range(len(applied))], (asked, applied)


def test_only_a_single_threaded_process_is_placed_on_the_home_cpu() -> None:
    placement = isolated.Placement(home=frozenset({1}), allowed=frozenset({0, 1}), threads_before=1)
    serial, parallel = (cast(KernelServer, SimpleNamespace(threads=lambda n=n: n)) for n in (1, 2))
    assert placement.cpus(serial, b"c") == {1}
    assert placement.cpus(parallel, b"c") == {0, 1}  # a kernel's threads keep every core it is given
    assert placement.cpus(serial, b"n") == {1}  # the stand-ins by what they are: serial, parallel
    assert placement.cpus(serial, b"p") == {0, 1}
    # The serial stand-in beside idle threads (`call_overhead`) is placed as a kernel with idle workers.
    assert placement.cpus(parallel, b"n") == {0, 1}


@pytest.mark.parametrize("filtered", [True, False], ids=["guarded", "control"])
def test_a_serial_kernel_runs_on_the_home_cpu_and_cannot_leave_it(
    filtered: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    cpu_target: Target,
) -> None:
    """A single-threaded kernel runs every call on its comparison's home CPU (`Placement`); one that
    moves itself off it on every call (choose_cpu.c) is refused by its filter (sched_setaffinity is
    not allowed) and stays. Control, the kernel's filter off: it ends every call elsewhere."""
    if len(os.sched_getaffinity(0)) < 2:  # CI's machine has two: it runs there
        unavailable("a kernel can leave its CPU only for another: two CPUs are needed")
    if not filtered:
        monkeypatch.setattr(isolated, "filter_for", lambda sandbox, program=b"": b"")
    reports = _reported(monkeypatch)
    placements = _placements(monkeypatch)
    commands: list[bytes] = []  # what each placement was for
    cpus = isolated.Placement.cpus
    monkeypatch.setattr(
        isolated.Placement,
        "cpus",
        lambda p, server, command: commands.append(command) or cpus(p, server, command),
    )
    backend = _isolated_past_admission(tmp_path_factory, "rt-cpu")
    profile = backend.profile(
        get_task("rmsnorm"), (RED_TEAM / "choose_cpu.c").read_text(), _no_peaks(cpu_target)
    )
    assert profile.outcome == Outcome.KEPT, profile.reason
    ran_on, home = reports[0]["ran_on"][0], reports[0]["home_cpu"]
    assert len(ran_on) >= ATTACK_TIMING.min_trials
    # Every thread went where it was placed (a parallel stand-in's one thread: on every CPU; the serial
    # stand-in's beside idle threads, each on one of them); after the stand-ins, each kernel call was
    # placed on the home CPU, whichever CPU the scheduler would have chosen.
    assert all(
        applied == [asked] or (len(applied) > 1 and all(len(cpu) == 1 and cpu <= asked for cpu in applied))
        for asked, applied in placements
    ), placements
    assert len(commands) == len(placements) and isolated.STAND_INS[0] in commands, commands
    kernel_calls = [
        asked
        for (asked, _), command in zip(placements, commands, strict=True)
        if command not in isolated.STAND_INS
    ]
    assert len(kernel_calls) > len(ran_on) and set(kernel_calls) == {frozenset({home})}, kernel_calls
    if filtered:
        assert set(ran_on) == {home}, (ran_on, home)
    else:
        assert home not in ran_on, (ran_on, home)


def _role_votes(server: KernelServer) -> tuple[int, int]:
    """role_from_order.c's (votes for candidate, votes for parent), from its state in the unused
    bytes after its output (struct kg_state there: magic, calls, two times, the two votes)."""
    shared, y = server._map, server.outputs[0]  # the evaluator's mapping of the child's outputs
    gap = y.__array_interface__["data"][0] - shared.__array_interface__["data"][0] + ((y.nbytes + 63) & ~63)
    state = np.asarray(shared[gap : gap + 48]).view(np.uint64)
    return int(state[4]), int(state[5])


@pytest.mark.parametrize("drawn", [True, False], ids=["guarded", "control"])
def test_the_order_of_each_pair_is_drawn_so_the_gaps_do_not_name_a_kernels_role(
    drawn: bool,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    cpu_target: Target,
) -> None:
    """role_from_order.c votes, at each call, for the role the gaps between its calls say it has,
    and spins 30% more once its votes say "parent". Control, the pairs strictly A B, B A: each
    copy's votes name its true role, and a copy of it is kept as 1.3x faster than itself (16 of 16
    runs, results/redteam-stop44). Guarded: each block of two pairs runs one in each order, which
    first drawn per block, so the gaps a kernel sees depend on the draw, not on its role. That is a
    mitigation, not a defence: the draw can still fall so that the votes name the roles (the same
    comparison was kept in 2 of 16 runs), and a parent that slows down at random needs no votes
    (docs/sandbox.md, "What this does not guarantee")."""
    _clocks_left_to_the_kernel(monkeypatch)  # the gaps are read on the time-stamp counter
    if not drawn:
        monkeypatch.setattr(isolated, "RANDOM_PAIR_ORDER", False)
    monkeypatch.setattr(isolated.random, "SystemRandom", lambda: random.Random(44))  # one fixed draw
    calls: list[tuple[int, bytes]] = []  # the role called and the command, call by call (0: the candidate)
    votes: list[tuple[int, int]] = []
    paired: list[int] = []  # how many pairs the run made (warm-up and crowded ones included)
    run, call = isolated._run, KernelServer.call

    def voted(*args: Any, **kwargs: Any) -> Any:
        servers = args[4]  # by role, the candidate first
        monkeypatch.setattr(
            KernelServer,
            "call",
            lambda server, deadline, command=b"c": (
                calls.append((servers.index(server), command)) or call(server, deadline, command)
            ),
        )
        report, verdict = run(*args, **kwargs)
        votes.extend(_role_votes(server) for server in servers)
        paired.append(args[3].warmup + len(report.extra["times"][0]) + report.extra["crowded_pairs"])
        return report, verdict

    monkeypatch.setattr(isolated, "_run", voted)
    # enough pairs after the few calls it takes to decide (calls 0-3) for them to set the median
    timing = dataclasses.replace(ATTACK_TIMING, min_trials=24, max_trials=24)
    backend = _isolated_past_admission(tmp_path_factory, "rt-role", timing)
    source = (RED_TEAM / "role_from_order.c").read_text()
    rmsnorm, target = get_task("rmsnorm"), _no_peaks(cpu_target)
    profile = backend.profile(rmsnorm, source, target, parent_source=source)
    assert profile.outcome == Outcome.KEPT and profile.judged, profile.reason
    # the stand-ins' calls left out; after the pairs, the candidate's independent sets
    kernel_calls = [role for role, command in calls if command not in isolated.STAND_INS][: 2 * paired[0]]
    pairs = [tuple(kernel_calls[i : i + 2]) for i in range(0, len(kernel_calls), 2)]
    if drawn:  # blocks of two pairs from the first timed one: one of each order, which first drawn
        timed = pairs[timing.warmup :]
        blocks = [timed[i : i + 2] for i in range(0, len(timed) - 1, 2)]
        assert len(blocks) >= 12 and all(first == second[::-1] for first, second in blocks), pairs
        assert {first for first, _ in blocks} == {(0, 1), (1, 0)}, pairs
    else:
        assert pairs == [(0, 1) if i % 2 == 0 else (1, 0) for i in range(len(pairs))], pairs
        candidate_votes, parent_votes = votes
        assert candidate_votes[0] >= 4 * candidate_votes[1] and candidate_votes[0] > 0, votes  # its role
        assert parent_votes[1] >= 4 * parent_votes[0] and parent_votes[1] > 0, votes
        # as the loop decides: a promising, unproven gain measured again and pooled (one noisy
        # comparison's interval reached below 1.0 at a 1.28x median in a suite of stop 52)
        again = functools.partial(loop._remeasure, rmsnorm, backend, target, source, source)
        decision = keep_decision(profile, again, keep_threshold=0.02)
        assert decision.keep and decision.speedup > 1.15, decision


@pytest.mark.parametrize("fixed", [True, False], ids=["guarded", "control"])
def test_both_kernels_of_a_comparison_run_in_one_address_layout(
    fixed: bool, monkeypatch: pytest.MonkeyPatch, isolated_timer: CBackend, cpu_target: Target
) -> None:
    """The two children of a comparison have their stacks and heaps at the same addresses (nothing
    randomised in them: where each process's landed moved a kernel's time by up to 15%, so a kernel
    compared with itself read 0.89-1.12x). Control, randomisation left on: they differ."""
    if not fixed:
        monkeypatch.setattr(bubblewrap, "ADDR_NO_RANDOMIZE", 0)  # personality(0): the default, randomised
    layouts: list[list[str]] = []
    load = KernelServer.load_kernel

    def loaded(server: KernelServer, deadline: float) -> None:
        load(server, deadline)
        maps = Path(f"/proc/{server.kernel_pid()}/maps").read_text().splitlines()
        layouts.append([line.split()[0] for line in maps if line.endswith(("[stack]", "[heap]"))])

    monkeypatch.setattr(KernelServer, "load_kernel", loaded)
    source = (CHEATS / "correct.c").read_text()
    # Judged or not (evaluator 8 refuses a comparison on a busy host), both children were loaded.
    isolated_timer.profile(get_task("rmsnorm"), source, _no_peaks(cpu_target), parent_source=source)
    candidate, parent = layouts
    assert candidate and len(candidate) == len(parent)
    assert (candidate == parent) == fixed, layouts
