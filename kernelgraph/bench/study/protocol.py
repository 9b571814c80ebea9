"""The study's protocol (docs/results.md, "Study v2: protocol"): its tasks, budgets, seeds, arms,
splits and replicates, and the plan a run follows. Changing any constant here is a new study."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernelgraph.agent.loop import DEFAULT_KEEP_THRESHOLD
from kernelgraph.agent.tasks.base import Task
from kernelgraph.core.models import RetrievalMode

# The protocol (docs/results.md, "Study v2: protocol"). Changing any of these is a new study.
# Six tasks from six families: the ~3 h of machine time the landscapes may take fits these, twice
# over, on 2 cores (stencil2d and rmsnorm have instances too, but were cut, whole, for time).
EVAL_TASKS: tuple[str, ...] = ("matmul", "transpose", "matvec", "softmax", "elementwise_chain", "reduction")
DEV_TASKS: tuple[str, ...] = ("layernorm",)  # the development set: tuned on, never reported
BUDGETS: tuple[int, ...] = (4, 8, 16)
SEEDS: tuple[int, ...] = tuple(range(10))
EXPERIENCE_BUDGET = 16  # attempts of the memoryless run that builds each instance's experience
EXPERIENCE_SEED = 1_000
NEIGHBOURS = (
    5  # k of counters, text and hybrid retrieval (one value for all three): the development set's choice
)
NEIGHBOUR_CHOICES: tuple[int, ...] = (5, 10, 20)  # what the development set may choose k from
TPE_STARTUP = 3  # random trials before TPE models the space
WARM_START_CONFIGS = 3  # configs built from retrieved evidence, enqueued before TPE's own
REPLICATES: tuple[tuple[str, str], ...] = (("A", "B"), ("B", "A"))  # (searched on, scored on)
SPLITS: tuple[str, ...] = ("instance", "family")
PRIMARY_K = 8
SPLIT_TITLES = {"instance": "instances", "family": "families", "development": "development set"}
REACH = 0.9  # "attempts to reach 90% of the oracle"
QUICK_TASKS: tuple[str, ...] = ("matmul", "softmax")


@dataclass(frozen=True)
class Arm:
    name: str
    kind: str  # "memoryless" | "bandit" | "tpe"
    mode: RetrievalMode | None = None  # the evidence it retrieves; None: none
    budget_factor: int = 1  # memoryless@4K spends 4 attempts for every 1 of the others


ARMS: tuple[Arm, ...] = (
    Arm("memoryless", "memoryless"),
    Arm("memoryless@4K", "memoryless", budget_factor=4),
    Arm("bandit-off", "bandit"),
    Arm("global", "bandit", RetrievalMode.GLOBAL),
    Arm("label", "bandit", RetrievalMode.LABEL),
    Arm("text", "bandit", RetrievalMode.TEXT),
    Arm("counters", "bandit", RetrievalMode.COUNTERS),
    Arm("hybrid", "bandit", RetrievalMode.HYBRID),
    Arm("tpe", "tpe"),
    Arm("tpe+counters", "tpe", RetrievalMode.COUNTERS),
)
CONTROLS: tuple[str, ...] = ("text", "label", "tpe", "global", "bandit-off", "memoryless", "memoryless@4K")
RETRIEVAL_MODES: tuple[RetrievalMode, ...] = (
    RetrievalMode.COUNTERS, RetrievalMode.TEXT, RetrievalMode.HYBRID, RetrievalMode.LABEL, RetrievalMode.GLOBAL,
)  # fmt: skip


def label_of(task: str, instance: str) -> str:
    """The task label an instance's experience carries in the graph (one label per instance, so the
    service's `exclude_tasks` holds out an instance or a family)."""
    return f"{task}:{instance}"


@dataclass
class StudyPlan:
    eval_tasks: tuple[str, ...] = EVAL_TASKS
    dev_tasks: tuple[str, ...] = DEV_TASKS
    budgets: tuple[int, ...] = BUDGETS
    seeds: tuple[int, ...] = SEEDS
    arms: tuple[Arm, ...] = ARMS
    splits: tuple[str, ...] = SPLITS
    replicates: tuple[tuple[str, str], ...] = REPLICATES
    neighbours: int = NEIGHBOURS
    instances: Mapping[str, tuple[str, ...]] | None = None  # task -> instances (None: all)

    def chosen(self, task: Task) -> list[str]:
        names = [i.name for i in task.instances]
        if self.instances and task.name in self.instances:
            names = [n for n in names if n in self.instances[task.name]]
        return names


def protocol_of(plan: StudyPlan) -> dict[str, Any]:
    return {
        "eval_tasks": list(plan.eval_tasks), "dev_tasks": list(plan.dev_tasks), "budgets": list(plan.budgets),
        "seeds": len(plan.seeds), "arms": [a.name for a in plan.arms], "splits": list(plan.splits),
        "replicates": [list(r) for r in plan.replicates], "neighbours": plan.neighbours,
        "experience_budget": EXPERIENCE_BUDGET, "tpe_startup": TPE_STARTUP, "keep_threshold": DEFAULT_KEEP_THRESHOLD,
        "primary_k": PRIMARY_K, "instances": dict(plan.instances) if plan.instances else None,
    }  # fmt: skip


def choose_neighbours(dev_report: Mapping[str, Any]) -> int:
    """The development set's choice of k: best counters@PRIMARY_K fraction of the oracle (ties: smaller k)."""
    scores = {int(k): v for k, v in dev_report.items()}
    return max(sorted(scores), key=lambda k: scores[k])
