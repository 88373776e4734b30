"""The documentation site: `mkdocs build --strict` passes (a warning, such as a broken link or
anchor, a page left out of the nav, or a docstring mkdocstrings cannot read, is an error), and
every page works in a real browser: served on 127.0.0.1, opened in headless Chromium, each page
has its title, nothing it asks the server for is missing, every link inside the site reaches a
built page and its `#anchor` an element of that page, and each code block of the page's
Markdown is a code block of the page."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import threading
from functools import partial
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import pytest
import yaml

import haltproof
from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# one pytest-xdist worker builds the site once for the module (scripts/test: --dist loadgroup)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs-site")]


class _Config(yaml.SafeLoader):
    """mkdocs.yml as data: its Python and !ENV tags read as plain nodes, never run."""


_Config.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
_Config.add_constructor("!ENV", lambda loader, node: None)


def nav_pages() -> list[str]:
    """The Markdown files mkdocs.yml's nav lists, relative to docs/, in nav order."""
    def walk(items: list) -> list[str]:
        out: list[str] = []
        for item in items:
            for value in item.values():
                out += walk(value) if isinstance(value, list) else [value]
        return out
    return walk(yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Config)["nav"])


def page_dir(page: str) -> str:
    """Where mkdocs builds a page (use_directory_urls): `how-to/ci.md` -> `how-to/ci/`."""
    return "" if page == "index.md" else page.removesuffix(".md") + "/"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("docs-site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HALTPROOF_API_TREE": str(out / "api-tree")}
    ran = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out / "site")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert "WARNING" not in ran.stderr, ran.stderr[-4000:]
    return out / "site"


def test_every_page_is_in_the_nav_and_built(site):
    pages = nav_pages()
    written = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(pages) == written                       # no page left out of the nav, none listed twice
    for page in pages:
        assert (site / page_dir(page) / "index.html").is_file(), page


class Page(HTMLParser):
    """What the tests read of a page's DOM: its title, ids, links and code blocks."""

    def __init__(self, dom: str):
        super().__init__()
        self.title, self.ids, self.hrefs, self.pre = "", set(), [], 0
        self._in_title = False
        self.feed(dom)

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        if "id" in found:
            self.ids.add(found["id"])
        if tag == "a" and found.get("href") is not None:
            self.hrefs.append(found["href"])
        self.pre += tag == "pre"
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def fences(markdown: str) -> int:
    """The fenced code blocks of a page's Markdown (a snippet included by `--8<--` among them)."""
    return len(re.findall(r"^\s*(```|~~~)[^\n]*\n.*?^\s*\1\s*$", markdown, re.S | re.M))


def test_the_api_page_documents_every_public_name(site):
    built = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'id="([^"]+)"', built))
    assert {f"haltproof.{name}" for name in haltproof.__all__ if name != "__version__"} <= ids


def test_the_report_page_shows_the_shipped_schema(site):
    built = (site / "reference" / "report" / "index.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", "", built))
    shipped = (ROOT / "src" / "haltproof" / "report.schema.json").read_text(encoding="utf-8")
    assert shipped.strip() in text


class _Server(SimpleHTTPRequestHandler):
    """The built site, quietly, noting what was asked for that does not exist."""

    missing: list[str]

    def log_message(self, format, *args):
        pass

    def send_error(self, code, message=None, explain=None):
        self.missing.append(f"{code} {self.path}")
        super().send_error(code, message, explain)


@pytest.fixture(scope="module")
def served(site):
    missing: list[str] = []
    handler = type("Handler", (_Server,), {"missing": missing})
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", missing
    server.shutdown()
    server.server_close()


def _dom(url: str, profile: Path) -> str:
    """The page as headless Chromium built it (its scripts run), after it loaded."""
    ran = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                          "--no-first-run", "--disable-background-networking", "--disable-component-update",
                          "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=3000",
                          "--dump-dom", url], capture_output=True, text=True, timeout=180)
    assert ran.returncode == 0, (url, ran.stderr[-2000:])
    return ran.stdout


def _target(site: Path, url: str) -> Path | None:
    """The built file a same-site URL serves, or None when there is none."""
    path = unquote(urlsplit(url).path).lstrip("/")
    file = site / path
    if path == "" or path.endswith("/"):
        file = file / "index.html"
    return file if file.is_file() else None


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium; "
                                             ".ci/run installs it): the site is not opened in a browser")
def test_every_page_renders_in_a_browser_with_working_links_and_code(site, served, tmp_path):
    base, missing = served
    pages = {page: Page(_dom(urljoin(base, page_dir(page)), tmp_path / "profile")) for page in nav_pages()}
    by_url = {urljoin(base, page_dir(page)): dom for page, dom in pages.items()}
    problems = []
    for page, dom in pages.items():
        url = urljoin(base, page_dir(page))
        if not dom.title.strip() or "404" in dom.title:
            problems.append(f"{page}: the title is {dom.title!r}")
        markdown = (ROOT / "docs" / page).read_text(encoding="utf-8")
        if dom.pre < fences(markdown):
            problems.append(f"{page}: {fences(markdown)} code blocks written, {dom.pre} in the page")
        for href in dom.hrefs:
            link = urljoin(url, href)
            if not link.startswith(base):
                continue                               # another site, mailto:, javascript:
            where, anchor = urldefrag(link)
            if _target(site, where) is None:
                problems.append(f"{page}: {href} reaches no page")
            elif anchor and where in by_url and unquote(anchor) not in by_url[where].ids:
                problems.append(f"{page}: {href}: no #{anchor} in that page")
    assert problems == []
    assert missing == []                               # nothing any page asked for (styles, scripts) was missing
