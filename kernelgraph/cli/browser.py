"""`kernelgraph browser`: the Neo4j Browser address of the configured server, opened where a display exists."""

from __future__ import annotations

import os
import sys
import webbrowser
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote, urlsplit

import typer
from rich.console import Console

from kernelgraph import resource
from kernelgraph.core.settings import Settings, get_settings

console = Console()

STYLE_FILE = resource("docs", "kernelgraph.grass")
HOSTED_BROWSER = "https://browser.neo4j.io/"


@dataclass(frozen=True)
class BrowserLink:
    """Where Neo4j Browser is, which Bolt address it connects to, and how to log in."""

    url: str
    connect_url: str
    user: str
    password_hint: str
    note: str | None = None


def _password_hint(settings: Settings) -> str:
    if settings.neo4j_password is not None:
        return "the environment variable KERNELGRAPH_NEO4J_PASSWORD (or .env)"
    return f"the file {settings.neo4j_home / 'password'} (cat it)"


def browser_link(settings: Settings) -> BrowserLink:
    """The Browser URL of the configured server, with its Bolt address filled in as `connectURL`."""
    user, hint = settings.neo4j_user, _password_hint(settings)
    if settings.uses_local_server:
        bolt = f"bolt://127.0.0.1:{settings.bolt_port}"
        url = f"http://127.0.0.1:{settings.http_port}/browser/?connectURL={quote(bolt, safe=':/')}"
        return BrowserLink(url, bolt, user, hint)
    uri = settings.effective_neo4j_uri
    parts = urlsplit(uri)
    host = parts.hostname or "127.0.0.1"
    if parts.scheme.endswith("+s") or parts.scheme.endswith("+ssc"):
        # TLS servers (Aura, clusters behind TLS): the hosted Browser speaks TLS Bolt to them.
        url = f"{HOSTED_BROWSER}?connectURL={quote(uri, safe=':/')}"
        note = (
            "remote TLS server: this is the hosted Neo4j Browser (for Aura, the Aura console's Query tool "
            "works too); the connection goes from your browser straight to the server"
        )
        return BrowserLink(url, uri, user, hint, note)
    url = f"http://{host}:7474/browser/?connectURL={quote(uri, safe=':/')}"
    note = (
        "remote server: assumes it serves Browser on its default HTTP port 7474; if not, open "
        f"{HOSTED_BROWSER} and connect to {uri}"
    )
    return BrowserLink(url, uri, user, hint, note)


def has_display() -> bool:
    """Can a web browser window open here (a desktop session, or macOS/Windows)?"""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def browser(
    open_window: Annotated[
        bool,
        typer.Option("--open/--no-open", help="Open the URL in a web browser (skipped without a display)."),
    ] = True,
) -> None:
    """Print (and open, where a display exists) the Neo4j Browser URL of the configured server."""
    link = browser_link(get_settings())
    console.print(f"Neo4j Browser: {link.url}", highlight=False, soft_wrap=True)
    console.print(f"  Connect URL: {link.connect_url}", highlight=False, soft_wrap=True)
    console.print(f"  User:        {link.user}", highlight=False, soft_wrap=True)
    console.print(f"  Password:    in {link.password_hint}", highlight=False, soft_wrap=True)
    console.print(
        f"  Style:       type :style in Browser and drop {STYLE_FILE} onto it (docs/exploring.md)",
        highlight=False,
        soft_wrap=True,
    )
    if link.note:
        console.print(f"  Note:        {link.note}", highlight=False, soft_wrap=True)
    if open_window and has_display():
        webbrowser.open(link.url)


def register(app: typer.Typer) -> None:
    app.command("browser")(browser)
