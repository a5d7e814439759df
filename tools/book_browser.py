"""Read the built book as a reader's browser shows it: every page loaded in headless Chromium.

    python tools/book_browser.py [docs/_build/html]

serves the built book on 127.0.0.1 (a port of its own) and loads every page in Chromium, driven over
the DevTools protocol on a pipe (``--remote-debugging-pipe``: no WebDriver, no websocket library,
nothing but the standard library).  Name resolution is switched off inside the browser
(``--host-resolver-rules``), so the pages are read as with the network unplugged and no request can
leave the machine; every request a page makes is recorded all the same.  For each page it reports

- ``raw TeX``: text that is still TeX after MathJax ran (a ``$``, ``\\(``, ``\\frac``, ``^{`` ... in the
  rendered text outside code, or a math element MathJax did not typeset, or TeX in the page title);
- ``MathJax error``: a formula MathJax could not parse (``merror``) or a macro it does not know (shown
  in red);
- ``image not loaded``: an ``<img>`` whose file did not load;
- ``request leaves the machine``: any request to an address other than the local server;
- ``table wider than the column``: a table that needs a sideways scroll bar;
- ``search boxes``: more than one visible search box;

and, on every page, each link to an anchor of another page (or of the same page) that does not land
on an element with that id (the index's theorem table among them).  ``tests/test_book.py`` runs it on
the book ``make test`` builds and on small broken books that it must reject.

Chromium comes from the system's packages (Debian: ``apt-get install -y chromium chromium-driver``);
``CHROMIUM=/path/to/chrome`` picks another binary.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urldefrag, urlsplit

INSTALL_HINT = (
    "Chromium is needed for the browser test of the book: on Debian/Ubuntu "
    "`apt-get update && apt-get install -y chromium chromium-driver` "
    "(or set CHROMIUM=/path/to/chromium)"
)

# The flags a headless Chromium needs on this kind of machine (as root, with a closed network): no
# sandbox (root), no GPU, no background traffic of its own (updates, sync, QUIC probes), a fresh
# profile; name resolution off except for the local server, so that nothing can leave the machine.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
    "--window-size=1280,900",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def find_chromium() -> str | None:
    """The Chromium binary: $CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"]
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (fd 3: commands, fd 4: replies)."""

    def __init__(self, binary: str, timeout: float = 30.0):
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="book-browser-")
        cmd_r, cmd_w = os.pipe()
        out_r, out_w = os.pipe()
        # Move the child's ends out of the way of fds 3 and 4 before the child dup2()s them there.
        hi_r = fcntl.fcntl(cmd_r, fcntl.F_DUPFD_CLOEXEC, 10)
        hi_w = fcntl.fcntl(out_w, fcntl.F_DUPFD_CLOEXEC, 10)
        os.close(cmd_r)
        os.close(out_w)

        def child_fds():
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,
            preexec_fn=child_fds,
        )
        os.close(hi_r)
        os.close(hi_w)
        self._w, self._r = cmd_w, out_r
        self._buf = b""
        self._id = 0
        self.events: list[dict] = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Network", "Runtime"):
            self.call(f"{domain}.enable", session=True)

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe (crashed?)")
            self._buf += chunk
        message, self._buf = self._buf.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, session: bool = False, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        while True:
            event = self._read(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def evaluate(self, expression: str):
        result = self.call(
            "Runtime.evaluate", session=True, expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._w, self._r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# Run in each page once it has loaded: wait for MathJax and for every image, then read the page.
PAGE_SCRIPT = r"""
(async () => {
  const imgs = [...document.images];
  for (const img of imgs) img.loading = "eager";
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  await Promise.all(imgs.map(img => img.complete ? null :
      new Promise(r => { img.addEventListener("load", r); img.addEventListener("error", r); })));
  const rawTex = /\$|\\[A-Za-z]{2,}|\\[()\[\]]|\^\{|_\{/;
  const skip = "pre, code, script, style, textarea, mjx-container, mjx-assistive-mml, .highlight, noscript";
  const raw = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || el.closest(skip)) continue;
    const m = n.data.match(rawTex);
    if (m) raw.push(n.data.slice(Math.max(0, m.index - 40), m.index + 60).replace(/\s+/g, " ").trim());
  }
  for (const el of document.querySelectorAll(".math")) {
    if (!el.querySelector("mjx-container") && !el.closest(skip))
      raw.push("untypeset math: " + el.textContent.slice(0, 80));
  }
  if (rawTex.test(document.title)) raw.push("title: " + document.title);
  const errors = [...document.querySelectorAll("mjx-merror, [data-mjx-error]")]
      .map(e => e.getAttribute("data-mjx-error") || e.textContent.slice(0, 80));
  if (window.MathJax && MathJax.startup && MathJax.startup.document && MathJax.startup.toMML) {
    for (const item of MathJax.startup.document.math) {
      const mml = MathJax.startup.toMML(item.root);
      if (/<merror|mathcolor="red"/.test(mml)) errors.push("in " + String(item.math).slice(0, 80));
    }
  }
  const images = imgs.filter(img => !(img.complete && img.naturalWidth > 0))
      .map(img => img.getAttribute("src"));
  const wide = [...document.querySelectorAll("article.bd-article table")]
      .filter(t => t.getBoundingClientRect().width > t.closest("article").getBoundingClientRect().width + 1)
      .map(t => (t.querySelector("th, td") || t).textContent.trim().slice(0, 40));
  const links = [...document.querySelectorAll("article.bd-article a[href*='#']")]
      .map(a => ({href: a.href, theoremTable: !!a.closest("#where-is-theorem-x")}));
  const ids = [...document.querySelectorAll("[id]")].map(e => e.id)
      .concat([...document.querySelectorAll("a[name]")].map(e => e.name));
  const searches = [...document.querySelectorAll(".search-button-field, input[type=search]")]
      .filter(e => e.offsetParent !== null && e.getClientRects().length > 0).length;
  return {raw, errors, images, wide, links, ids, searches, mathjax: !!window.MathJax,
          formulas: document.querySelectorAll("mjx-container").length};
})()
"""


@dataclass
class PageReport:
    page: str
    formulas: int = 0
    problems: list[str] = field(default_factory=list)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def check_book(
    html_dir: str | Path,
    binary: str | None = None,
    timeout: float = 30.0,
    browser: Browser | None = None,
    pages: list[str] | None = None,
) -> list[PageReport]:
    """Load every page of a built book in headless Chromium; one report per page (problems empty = good).

    Parameters
    ----------
    html_dir : path of the built HTML book (``docs/_build/html``).
    binary : the Chromium binary (default: ``find_chromium()``).
    timeout : seconds allowed for one page (load, MathJax and images).
    browser : a running ``Browser`` to use (and leave running), e.g. one for several checks; its HTTP
        cache is cleared first.  Default: a new one, closed at the end.
    pages : the pages to load, paths under ``html_dir`` (default: every page).  A link is checked
        against the anchors of the loaded pages only.

    Returns
    -------
    list of PageReport, in the order of the pages' paths; a broken link is reported on its page.
    """
    html_dir = Path(html_dir).resolve()
    if not (html_dir / "index.html").is_file():
        raise FileNotFoundError(f"html_dir: no index.html in {html_dir} (build the book first: make book)")
    if browser is None:
        binary = binary or find_chromium()
        if binary is None:
            raise FileNotFoundError(INSTALL_HINT)
    every = sorted(
        p.relative_to(html_dir).as_posix()
        for p in html_dir.rglob("*.html")
        if p.relative_to(html_dir).parts[0] not in {"_static", "_sources", "_images"}
        and p.name not in {"search.html", "genindex.html"}
    )
    if pages is not None and not set(pages) <= set(every):
        raise ValueError(f"pages: not pages of {html_dir}: {sorted(set(pages) - set(every))}")
    pages = every if pages is None else sorted(pages)
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    reports, ids, links = [], {}, []
    try:
        with Browser(binary, timeout=timeout) if browser is None else nullcontext(browser) as browser:
            browser.call("Network.clearBrowserCache", session=True)  # nothing from an earlier check
            for page in pages:
                report = PageReport(page)
                browser.events.clear()
                browser.call("Page.navigate", session=True, url=base + page)
                browser.wait_for("Page.loadEventFired")
                seen = browser.evaluate(PAGE_SCRIPT)
                requests = [
                    e["params"]["request"]["url"]
                    for e in browser.events
                    if e.get("method") == "Network.requestWillBeSent"
                ]
                outside = sorted(
                    {
                        u
                        for u in requests
                        if not (u.startswith(base) or urlsplit(u).scheme in {"data", "blob", "about"})
                    }
                )
                report.formulas = seen["formulas"]
                report.problems += [f"raw TeX: {t}" for t in seen["raw"]]
                report.problems += [f"MathJax error: {t}" for t in seen["errors"]]
                report.problems += [f"image not loaded: {t}" for t in seen["images"]]
                report.problems += [f"request leaves the machine: {u}" for u in outside]
                report.problems += [f"table wider than the column: {t!r}" for t in seen["wide"]]
                if seen["searches"] > 1:
                    report.problems.append(f"{seen['searches']} search boxes on the page (one is enough)")
                ids[page] = set(seen["ids"])
                links += [(report, link) for link in seen["links"]]
                reports.append(report)
    finally:
        server.shutdown()
        server.server_close()
    for report, link in links:
        url, fragment = urldefrag(link["href"])
        if not url.startswith(base) or not fragment:
            continue
        target = unquote(urlsplit(url).path).lstrip("/") or "index.html"
        if target.endswith("/"):
            target += "index.html"
        if target in ids and unquote(fragment) not in ids[target]:
            where = "theorem table link" if link["theoremTable"] else "link"
            report.problems.append(f"{where} does not land on its anchor: {target}#{fragment}")
    return reports


def main(argv: list[str]) -> int:
    html = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "docs" / "_build" / "html"
    start = time.monotonic()
    reports = check_book(html)
    bad = [r for r in reports if r.problems]
    for r in bad:
        print(f"{r.page}:")
        for problem in r.problems:
            print(f"  {problem}")
    print(
        f"{len(reports)} pages, {sum(r.formulas for r in reports)} formulas rendered, "
        f"{sum(len(r.problems) for r in reports)} problems on {len(bad)} pages "
        f"({time.monotonic() - start:.1f} s)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
