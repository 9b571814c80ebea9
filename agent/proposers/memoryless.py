"""The "scale the search" baseline: a uniform, seeded choice among the applicable transforms."""

from __future__ import annotations

import random

from kernelgraph.agent.proposers.base import Proposal, ProposalContext, candidates_by_transform


class MemorylessProposer:
    """Picks a transform uniformly among those that apply, then its parameters uniformly.

    Configs already tried in this run are never proposed again; `None` once every reachable
    neighbour of the current best has been tried.
    """

    name = "memoryless"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def propose(self, context: ProposalContext) -> Proposal | None:
        by_transform = candidates_by_transform(context)
        if not by_transform:
            return None
        transform = self.rng.choice(sorted(by_transform))
        choice = self.rng.choice(by_transform[transform])
        return Proposal(
            transform=choice.transform,
            params=dict(choice.params),
            config=choice.config,
            rationale=f"uniform random choice among {len(by_transform)} applicable transforms",
        )
