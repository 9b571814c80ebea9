"""KernelGraph: an experience graph on Neo4j that lets kernel-optimizing agents learn across tasks and hardware.

The repository keeps its folders at the top level (service/, agent/, core/, client/, cypher/, schema/,
docker/); this package links them under one import name, so an installed wheel holds
`kernelgraph.service`, `kernelgraph.agent`, `kernelgraph.core`, `kernelgraph.client` and the data they
read (cypher/, schema/, docker/neo4j/pom.xml) side by side. Only the commands (kernelgraph/cli/) and
the experiments (kernelgraph/bench/) live in this folder itself. docs/code-map.md maps the code.
"""

from pathlib import Path

__version__ = "0.2.0"

# Not resolved: in a checkout this folder's links lead to the top-level folders, in a wheel the same
# names are plain folders; both read the same relative paths.
PACKAGE_ROOT = Path(__file__).parent


def resource(*parts: str) -> Path:
    """A data file or folder shipped with the package (e.g. resource("cypher"))."""
    return PACKAGE_ROOT.joinpath(*parts)
