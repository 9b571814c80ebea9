"""The KernelGraph client: what an agent needs to use the experience graph.

- `KernelGraphClient`: the HTTP client; `connect(settings)` picks HTTP or, with the service installed,
  the in-process client.
- The contract it speaks (models, signature, errors, settings) is the shared core, kernelgraph.core;
  `Settings` and `KernelGraphError` are re-exported here for an integrator's one import.

Needs httpx and pydantic only: importing it loads no server, no Neo4j driver and no torch.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from kernelgraph.client.http import ExperienceClient, KernelGraphClient, error_from_response
from kernelgraph.core.errors import KernelGraphError
from kernelgraph.core.settings import Settings, get_settings

__all__ = ["ExperienceClient", "KernelGraphClient", "connect", "error_from_response"]

IN_PROCESS_ENTRY_POINT = ("kernelgraph.clients", "in-process")


def connect(settings: Settings | None = None) -> ExperienceClient:
    """An ExperienceClient: HTTP when `service_url` is set, else in-process on Neo4j (needs [service]).

    The returned client owns what it opened (HTTP pool or Neo4j driver); call `close()` when done.
    """
    settings = settings or get_settings()
    if settings.service_url:
        key = settings.api_key.get_secret_value() if settings.api_key else None
        return KernelGraphClient(settings.service_url, key)
    group, name = IN_PROCESS_ENTRY_POINT
    try:
        # Present in every install's metadata; loadable only with the [service] extra's packages.
        factory = next(iter(entry_points(group=group, name=name))).load()
    except (StopIteration, ModuleNotFoundError) as exc:
        missing = f" (missing: {exc.name})" if isinstance(exc, ModuleNotFoundError) else ""
        raise KernelGraphError(
            f"no KERNELGRAPH_SERVICE_URL and no in-process service installed{missing} "
            "(fix: set KERNELGRAPH_SERVICE_URL, or pip install 'kernelgraph[service]')",
            field="service_url",
        ) from None
    client: ExperienceClient = factory(settings)
    return client
