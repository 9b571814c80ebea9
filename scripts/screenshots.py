"""Screenshots of the real Neo4j Browser for docs/exploring.md, so they stay true as the product changes.

Starts (or reuses) the configured local server, applies the schema, seeds the `tour` namespace
(kernelgraph/bench/demo_graph.py) and imports KernelBench's published timings (the copy shipped as package
data) into the `kernelbench` namespace, then drives headless Chromium over the DevTools protocol: loads
docs/kernelgraph.grass, logs in, and for each question of the tour runs the `:param` block of a
cypher/ file followed by the file itself, exactly as a user would paste them, and saves a PNG under
docs/img/. Needs `chromium` (Debian: apt-get install -y chromium) and websocket-client (dev extra).

    KERNELGRAPH_DATA_HOME=/tmp/kg-docs KERNELGRAPH_BOLT_PORT=27687 KERNELGRAPH_HTTP_PORT=27474 \\
        .venv/bin/python scripts/screenshots.py
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import websocket

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernelgraph.bench.demo_graph import NAMESPACE, seed  # noqa: E402
from kernelgraph.core.settings import get_settings  # noqa: E402
from kernelgraph.service import migrate  # noqa: E402
from kernelgraph.service.importers.kernelbench import SHIPPED_TIMINGS, Config, import_timings, kernel_id_of  # noqa: E402
from kernelgraph.service.inprocess import InProcessClient  # noqa: E402
from kernelgraph.service.knowledge import KnowledgeService  # noqa: E402
from kernelgraph.service.neo4j_local import LocalNeo4j  # noqa: E402
from kernelgraph.service.store import GraphStore, open_driver  # noqa: E402

IMG = REPO / "docs" / "img"
GRASS = REPO / "docs" / "kernelgraph.grass"
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
    "--window-size=1400,900", "--hide-scrollbars",
)  # fmt: skip
# Signature version 2 as nvidia_ncu measures it (null: ridge_position, not measured there).
MEMORY_BOUND_ROW = [0.1, 0.8, None, 0.25, 0.6, 0.6, 0.4, 0.0, 0.3, 0.1, 0.8]


@dataclass(frozen=True)
class Shot:
    image: str
    query: str  # a file in cypher/
    params: dict[str, Any]
    graph: bool  # the result is drawn as a graph (give the layout time to settle)


def cypher_literal(value: Any) -> str:
    """A Python value as the Cypher literal a user types after `:param name =>`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(value, list):
        return "[" + ", ".join(cypher_literal(v) for v in value) + "]"
    return repr(value)


def grass_to_sheet(text: str) -> dict[str, dict[str, str]]:
    """Parse GraSS into the object Browser keeps in localStorage['neo4j.grass']."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    sheet: dict[str, dict[str, str]] = {}
    # Bodies may hold braces inside quoted captions ("{task} {variant}").
    for selector, body in re.findall(r'([\w.\-]+)\s*\{((?:[^{}"]|"[^"]*")*)\}', text):
        rules = (line.split(":", 1) for line in body.split(";") if ":" in line)
        sheet[selector] = {k.strip(): v.strip().strip('"') for k, v in rules}
    return sheet


class Chrome:
    """Headless Chromium and one DevTools websocket to its page."""

    def __init__(self) -> None:
        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        if chromium is None:
            raise SystemExit("chromium not found (fix: apt-get install -y chromium)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.profile = tempfile.mkdtemp(prefix="kg-chromium-")
        self.process = subprocess.Popen(
            [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", f"--remote-debugging-port={port}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json") as response:
                    pages = [p for p in json.load(response) if p["type"] == "page"]
                if pages:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("chromium did not open its DevTools port")
            time.sleep(0.3)
        self.ws = websocket.create_connection(
            pages[0]["webSocketDebuggerUrl"], timeout=60, suppress_origin=True
        )
        self.ids = itertools.count(1)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))

    def js(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.js(expression):
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {expression}")
            time.sleep(0.2)

    def type_into(self, selector: str, text: str) -> None:
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        self.send("Input.insertText", text=text)

    def key(self, key: str, code: str, keycode: int, modifiers: int = 0) -> None:
        for kind in ("keyDown", "keyUp"):
            self.send("Input.dispatchKeyEvent", type=kind, key=key, code=code,
                      windowsVirtualKeyCode=keycode, modifiers=modifiers)  # fmt: skip

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.process.terminate()
            self.process.wait(timeout=20)
            shutil.rmtree(self.profile, ignore_errors=True)


class Browser:
    """Neo4j Browser in that Chromium: log in, run editor text, read the newest frame."""

    EDITOR = "#monaco-main-editor textarea"

    def __init__(self, chrome: Chrome, http_port: int, bolt_port: int) -> None:
        self.chrome = chrome
        self.url = f"http://127.0.0.1:{http_port}/browser/?connectURL=bolt://127.0.0.1:{bolt_port}"

    def login(self, user: str, password: str) -> None:
        c = self.chrome
        c.send("Page.enable")
        c.send("Page.navigate", url=self.url)
        c.wait_for("!!document.querySelector('[data-testid=connect]')", 60)
        # The style lives in localStorage: set it, then reload so Browser picks it up.
        sheet = json.dumps(json.dumps(grass_to_sheet(GRASS.read_text())))
        c.js(f"localStorage.setItem('neo4j.grass', {sheet})")
        c.send("Page.reload")
        time.sleep(1)
        c.wait_for("!!document.querySelector('[data-testid=connect]')", 60)
        c.type_into("[data-testid=username]", user)
        c.type_into("[data-testid=password]", password)
        c.js("document.querySelector('[data-testid=connect]').click()")
        # Connected once Browser greets with its start guide (it opens only after a successful login).
        c.wait_for("document.body.innerText.includes('Getting started with Neo4j Browser')", 60)
        time.sleep(1.0)

    def run(self, text: str, settle_s: float = 1.0) -> str:
        """Paste `text` into the editor (a paste keeps indentation as in the file), run it, wait."""
        c = self.chrome
        c.js(f"document.querySelector('{self.EDITOR}').focus()")
        c.key("a", "KeyA", 65, modifiers=2)
        c.key("Backspace", "Backspace", 8)
        c.js(
            "(() => { const t = document.querySelector('" + self.EDITOR + "'); const d = new DataTransfer();"
            f" d.setData('text/plain', {json.dumps(text)});"
            " t.dispatchEvent(new ClipboardEvent('paste', {clipboardData: d, bubbles: true, cancelable: true}));"
            " })()"
        )
        c.js("document.querySelector('[data-testid=editor-Run]').click()")
        if text.strip() != ":clear":
            # The newest frame is first; wait until it is this command's frame and has finished.
            head = json.dumps(" ".join(text.split())[:40])
            done = "'Successfully set'" if text.startswith(":param") else "''"
            c.wait_for(
                "(() => { const f = document.querySelector('[data-testid=frame]'); if (!f) return false;"
                " const t = f.innerText.replace(/\\s+/g, ' ');"
                f" return t.includes({head}) && t.includes({done}) && !f.querySelector('.spinner, [data-testid=spinner]'); }})()",
                60,
            )
        time.sleep(settle_s)
        return str(c.js("document.querySelector('[data-testid=frame]').innerText") or "")


KERNELBENCH = "kernelbench"
# Real data for the transfer shots: the two Hopper/Blackwell machines, on the problems they share.
TRANSFER_SOURCE, TRANSFER_DESTINATION = "H100_together:H100-80GB-HBM3", "B200_together:B200"


def shots(demo_kernel: str, evidence_keys: list[str], kernelbench_kernel: str) -> list[Shot]:
    ns = [NAMESPACE]
    kb = [KERNELBENCH]
    return [
        Shot("q1-what-worked.png", "transform_leaderboard",
             {"namespaces": ns, "pattern": "row-reduction", "target": "h100-sm90", "limit": 20}, False),
        Shot("q2-lineage.png", "kernel_lineage_graph",
             {"namespaces": ns, "kernel_id": demo_kernel, "max_depth": 50}, True),
        Shot("q3-transfer.png", "transfer_pairs",
             {"namespaces": kb, "source": TRANSFER_SOURCE, "destination": TRANSFER_DESTINATION,
              "pattern": "row-softmax", "failure_log_speedup": -0.1}, False),
        Shot("q4-failures.png", "failure_hotspots", {"namespaces": ns, "target": None, "limit": 25}, False),
        Shot("q5-evidence.png", "attempt_evidence_graph", {"namespaces": ns, "attempt_keys": evidence_keys}, True),
        Shot("q6-transfer-matrix.png", "transfer_matrix", {"namespaces": kb, "transform": None, "min_pairs": 20}, False),
        Shot("q7-kernelbench-lineage.png", "kernel_lineage_graph",
             {"namespaces": kb, "kernel_id": kernelbench_kernel, "max_depth": 50}, True),
    ]  # fmt: skip


def main() -> None:
    settings = get_settings()
    if settings.uses_local_server:
        LocalNeo4j(settings).start()
    driver = open_driver(settings)
    try:
        store = GraphStore(driver, settings.neo4j_database)
        migrate.apply(store)
        knowledge = KnowledgeService(store)
        demo = seed(knowledge)
        best = knowledge.retrieve(
            [NAMESPACE], {"target": "h100-sm90", "signature": MEMORY_BOUND_ROW, "limit": 3}
        ).transforms[0]
        evidence = best.evidence_attempt_keys[:3]
        print(f"lineage kernel {demo.lineage_kernel_id}; top recommendation {best.transform}: {evidence}")
        imported = import_timings(SHIPPED_TIMINGS, InProcessClient(knowledge, KERNELBENCH))
        print(f"KernelBench timings: {imported.speedups} eager/compiled pairs in namespace {KERNELBENCH!r}")
        # The max-autotune variant of the first softmax problem: one step from its eager parent.
        kernelbench_kernel = kernel_id_of(1, "23_Softmax.py", Config("inductor", "max-autotune"))
    finally:
        driver.close()

    IMG.mkdir(parents=True, exist_ok=True)
    chrome = Chrome()
    try:
        browser = Browser(chrome, settings.http_port, settings.bolt_port)
        browser.login(settings.neo4j_user, settings.effective_neo4j_password())
        for shot in shots(demo.lineage_kernel_id, evidence, kernelbench_kernel):
            browser.run(":clear", 0.5)
            for name, value in shot.params.items():
                browser.run(f":param {name} => {cypher_literal(value)}", 0.4)
            browser.run(":clear", 0.5)
            text = browser.run(
                (REPO / "cypher" / f"{shot.query}.cypher").read_text(), 4.0 if shot.graph else 1.5
            )
            if "ERROR" in text[:2000]:
                raise SystemExit(f"{shot.query} failed in Browser:\n{text[:2000]}")
            chrome.screenshot(IMG / shot.image)
            print(f"docs/img/{shot.image}: {shot.query} {json.dumps(shot.params)}")
    finally:
        chrome.close()


if __name__ == "__main__":
    main()
