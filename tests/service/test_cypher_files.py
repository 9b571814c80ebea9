"""Every named query in cypher/ runs as-is in Neo4j Browser after the `:param` block its header shows.

The block is read the way Browser reads it (checked against Browser 5.24 on the real server):
- `:param name => expression` is sent to the server as `RETURN expression`, so integers stay integers
  and Cypher expressions (`[i IN range(1, 384) | 0.05]`) work; this test does the same;
- `:param {map}` is parsed in the browser: only literals, and every number becomes a float (so
  `LIMIT $limit` fails with "20.0 is not a valid value"). `browser_map` below mimics that parser
  strictly, so a header that would break in Browser breaks here.
Each query then runs inside a transaction that is rolled back, so write queries leave nothing behind.
"""

from __future__ import annotations

import re
from typing import Any

import neo4j
import pytest

from kernelgraph.service.queries import CYPHER_DIR, NamedQuery, parse_query
from kernelgraph.service.store import GraphStore

pytestmark = pytest.mark.neo4j

QUERY_FILES = sorted(CYPHER_DIR.glob("*.cypher"))
_MAP_LINE = re.compile(r"^:params?\s+(\{.*\})\s*$")
_ARROW_LINE = re.compile(r"^:param\s+([A-Za-z_][A-Za-z0-9_]*)\s*=>\s*(.+?)\s*$")
_HEADER_PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")|(?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)|(?P<punct>[{}\[\]:,]))"
)


class _Literal:
    """A strict reader of Browser's `:param {map}` form: literals only, numbers as floats."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text.rstrip()):
            match = _TOKEN.match(text, pos)
            assert match, (
                f"not a literal at {text[pos : pos + 30]!r}: Browser's map form takes no expressions"
            )
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.pos = 0

    def next(self) -> tuple[str, str]:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def value(self) -> Any:
        kind, text = self.next()
        if kind == "str":
            return text[1:-1].encode().decode("unicode_escape")
        if kind == "num":
            return float(text)  # Browser's map form: JavaScript numbers, sent as floats
        if kind == "word":
            words = {"null": None, "true": True, "false": False}
            assert text in words, f"bare word {text!r}: Browser would send it as a string"
            return words[text]
        if text == "[":
            items: list[Any] = []
            while self.tokens[self.pos][1] != "]":
                items.append(self.value())
                if self.tokens[self.pos][1] == ",":
                    self.pos += 1
            self.pos += 1
            return items
        assert text == "{", f"unexpected {text!r}"
        entries: dict[str, Any] = {}
        while self.tokens[self.pos][1] != "}":
            kind, key = self.next()
            assert kind in ("word", "str"), f"bad map key {key!r}"
            assert self.next()[1] == ":"
            entries[key.strip("'\"")] = self.value()
            if self.tokens[self.pos][1] == ",":
                self.pos += 1
        self.pos += 1
        return entries


def browser_map(text: str) -> dict[str, Any]:
    """What Browser sets for `:param {text}`."""
    reader = _Literal(text)
    value = reader.value()
    assert reader.pos == len(reader.tokens) and isinstance(value, dict)
    return value


def browser_params(store: GraphStore, query: NamedQuery) -> dict[str, Any]:
    """The parameters Browser holds after running the header's `:param` block, line by line."""
    params: dict[str, Any] = {}
    found = False
    for line in query.header.splitlines():
        line = line.strip()
        if match := _MAP_LINE.match(line):
            params.update(browser_map(match.group(1)))
            found = True
        elif match := _ARROW_LINE.match(line):
            records, _, _ = store.driver.execute_query(
                neo4j.Query(f"RETURN {match.group(2)} AS value"),  # our own header, not user input
                database_=store.database,
            )
            params[match.group(1)] = records[0]["value"]
            found = True
    assert found, f"{query.path.name}: the header needs a `// :param` block"
    return params


def test_the_query_files_are_found() -> None:
    assert len(QUERY_FILES) >= 10


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.stem)
def test_header_documents_every_parameter(path: Any) -> None:
    query = parse_query(path)
    assert "Parameters:" in query.header, f"{path.name}: the header needs a `Parameters:` line"
    named = set(_HEADER_PARAM.findall(query.header))
    undocumented = query.params - named
    assert not undocumented, f"{path.name}: the header does not name {sorted(undocumented)}"
    if not query.params:
        assert "Parameters: none" in query.header, f"{path.name}: say `Parameters: none`"
    assert "Returns:" in query.header, f"{path.name}: the header needs a `Returns:` line"


@pytest.mark.parametrize("path", QUERY_FILES, ids=lambda p: p.stem)
def test_runs_after_its_param_block(store: GraphStore, path: Any) -> None:
    query = parse_query(path)
    params = browser_params(store, query)
    missing = query.params - params.keys()
    unknown = params.keys() - query.params
    assert not missing, f"{path.name}: the :param example lacks {sorted(missing)}"
    assert not unknown, f"{path.name}: the :param example sets unused {sorted(unknown)}"
    with store.driver.session(database=store.database) as session:
        tx = session.begin_transaction()
        try:
            result = tx.run(query.cypher, params)
            list(result)
            result.consume()
        finally:
            tx.rollback()


def test_record_attempts_example_records_an_attempt(store: GraphStore) -> None:
    """The write examples chain in Browser: register the target and the vocabulary, then record."""
    chain = [parse_query(CYPHER_DIR / f"{name}.cypher") for name in ("upsert_targets", "record_vocabulary")]
    record = parse_query(CYPHER_DIR / "record_attempts.cypher")
    with store.driver.session(database=store.database) as session:
        tx = session.begin_transaction()
        try:
            for query in chain:
                tx.run(query.cypher, browser_params(store, query)).consume()
            rows = tx.run(record.cypher, browser_params(store, record)).data()
        finally:
            tx.rollback()
    assert rows == [{"attempt_key": "browser:1", "created": True}]


def test_browser_map_reads_like_browser() -> None:
    """Browser 5.24 shows `:param {n: 3}` as 3.0 and leaves expressions unevaluated."""
    assert browser_map("{n: 3, s: 'x', l: [1.5, 'y'], m: {k: null}, t: true}") == {
        "n": 3.0, "s": "x", "l": [1.5, "y"], "m": {"k": None}, "t": True,
    }  # fmt: skip
    assert isinstance(browser_map("{n: 3}")["n"], float)
    with pytest.raises(AssertionError):
        browser_map("{e: [i IN range(1, 3) | 0.05]}")
