"""The shared core: the contract the service, the agent and the client all speak, in one place.

- `models`: every request and response (attempts, measurements, retrieval), validated at the edge.
- `signature`: the counter signature, its names and version.
- `errors`: one error type per failure, the same on both sides of HTTP.
- `settings`: every setting KernelGraph reads, one class per role.
- `ncu`: Nsight Compute's metric names and exports, mapped to the signature's counters.

Needs pydantic and pydantic-settings only (pyproject.toml's import contracts keep it so): the sandbox
exposes it, with the agent, to the steps that run a kernel.
"""
