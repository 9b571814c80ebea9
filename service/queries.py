"""The registry of named Cypher queries: every file in cypher/ and schema/, loaded once.

A query file starts with `//` comment lines (what it takes, what it returns, an example `:param`
block) and then the Cypher itself, so the same file runs as-is in Neo4j Browser. Parameters are
discovered by parsing the text (`$name` outside comments and strings), and a call that passes
an unknown or misses a required parameter fails before reaching the server.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, LiteralString, cast

from kernelgraph import resource

CYPHER_DIR = resource("cypher")
SCHEMA_DIR = resource("schema")

_STRING_OR_COMMENT = re.compile(r"//[^\n]*|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`")
_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


class QueryError(Exception):
    """A query was called with parameters that do not match its file (a programming error)."""


@dataclass(frozen=True)
class NamedQuery:
    name: str
    path: Path
    text: str
    header: str
    params: frozenset[str]

    @property
    def cypher(self) -> LiteralString:
        # The text comes from files in this repository, never from callers: it is a literal in spirit.
        return cast(LiteralString, self.text)

    def statements(self) -> list[LiteralString]:
        """Statements split on `;` at line ends (schema files hold several)."""
        body = _strip_comments(self.text)
        parts = [part.strip() for part in re.split(r";\s*(?:\n|$)", body)]
        return [cast(LiteralString, part) for part in parts if part]

    def check(self, params: dict[str, Any]) -> None:
        missing = self.params - params.keys()
        unknown = params.keys() - self.params
        if missing or unknown:
            raise QueryError(
                f"query {self.name!r}: missing parameters {sorted(missing)}, unknown parameters {sorted(unknown)}"
            )


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def parameters_of(text: str) -> frozenset[str]:
    """The `$name` parameters a Cypher text uses (outside comments and strings)."""
    return frozenset(_PARAM.findall(_STRING_OR_COMMENT.sub(" ", text)))


def parse_query(path: Path) -> NamedQuery:
    text = path.read_text()
    header_lines = []
    for line in text.splitlines():
        if not line.lstrip().startswith("//"):
            break
        header_lines.append(line.lstrip()[2:].strip())
    return NamedQuery(path.stem, path, text, "\n".join(header_lines), parameters_of(text))


@dataclass(frozen=True)
class QueryRegistry:
    queries: dict[str, NamedQuery]

    def __getitem__(self, name: str) -> NamedQuery:
        try:
            return self.queries[name]
        except KeyError:
            raise QueryError(f"no query named {name!r} in {CYPHER_DIR}") from None


@lru_cache(maxsize=1)
def registry() -> QueryRegistry:
    """All named queries of cypher/, read once on first use."""
    return QueryRegistry({path.stem: parse_query(path) for path in sorted(CYPHER_DIR.glob("*.cypher"))})


@lru_cache(maxsize=1)
def migrations() -> tuple[NamedQuery, ...]:
    """schema/NNNN_*.cypher in version order, read once (GET /v1/health compares them on every probe)."""
    return tuple(parse_query(path) for path in sorted(SCHEMA_DIR.glob("[0-9][0-9][0-9][0-9]_*.cypher")))
