"""A headless Chromium driven over the DevTools protocol, for the tests that use the built pages
as a reader would (tests/test_widget_browser.py). Chromium comes from Debian (`.ci/run` installs
it when absent); websocket-client speaks the protocol."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

import websocket

CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)


# JavaScript: moveFirstControl(root) moves the first control of an interactive figure as a reader
# would: a checkbox or radio button clicked, a select to its next option, a range or number input
# from its minimum to its maximum (else to its minimum), then its input and change events. Only
# properties change (a click, selectedIndex, value), never the markup, so any change in the
# figure's HTML afterwards is the figure's answer.
MOVE_FIRST_CONTROL = """function moveFirstControl(root) {
  var c = root.querySelector('input, select');
  if (c.type === 'radio') {  // a checked radio clicked again changes nothing: its group's next
    var group = Array.prototype.slice.call(root.querySelectorAll('input[type=radio]'))
      .filter(function (r) { return r.name === c.name && !r.checked && !r.disabled; });
    c = group[0] || c;
  }
  if (c.type === 'checkbox' || c.type === 'radio') c.click();
  else if (c.tagName === 'SELECT') c.selectedIndex = (c.selectedIndex + 1) % c.options.length;
  else c.value = String(Number(c.value) === Number(c.min || 0) ? (c.max || 1) : (c.min || 0));
  c.dispatchEvent(new Event('input', {bubbles: true}));
  c.dispatchEvent(new Event('change', {bubbles: true}));
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One headless Chromium with one page. ``evaluate(js)`` returns the value of an expression
    (awaiting a promise); ``errors`` collects console errors and uncaught exceptions."""

    def __init__(self, width: int = 1280, height: int = 900):
        self.port = _free_port()
        # Chromium's helper processes may still write to the profile for a moment after close():
        # the folder's removal must not fail a test that passed
        self.profile = tempfile.TemporaryDirectory(ignore_cleanup_errors=True)
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--no-first-run",
             f"--remote-debugging-port={self.port}", "--remote-allow-origins=*",
             f"--user-data-dir={self.profile.name}", f"--window-size={width},{height}",
             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)  # its own process group: close() stops its helpers too
        deadline = time.time() + 30
        while True:
            try:
                tabs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json"))
                page = next(t for t in tabs if t["type"] == "page")
                break
            except Exception:  # noqa: BLE001 (not up yet)
                if time.time() > deadline:
                    self.close()
                    raise RuntimeError("headless Chromium did not start") from None
                time.sleep(0.2)
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], max_size=None)
        self.n, self.errors = 0, []
        self.send("Runtime.enable")
        self.send("Page.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=width < 600)

    def _event(self, m: dict) -> None:
        if m.get("method") == "Runtime.exceptionThrown":
            d = m["params"]["exceptionDetails"]
            self.errors.append(d.get("exception", {}).get("description") or d.get("text"))
        elif m.get("method") == "Runtime.consoleAPICalled" and m["params"]["type"] == "error":
            self.errors.append(" ".join(str(a.get("value", a.get("description")))
                                        for a in m["params"]["args"]))
        elif m.get("method") == "Log.entryAdded" and m["params"]["entry"]["level"] == "error":
            self.errors.append(m["params"]["entry"]["text"])

    def send(self, method: str, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.n:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._event(m)

    def evaluate(self, expression: str):
        r = self.send("Runtime.evaluate", expression=expression, awaitPromise=True,
                      returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression[:80]}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def goto(self, url: str, settle: float = 0.5) -> None:
        self.send("Log.enable")
        self.send("Page.navigate", url=url)
        deadline = time.time() + 30
        while True:
            try:
                if self.evaluate("document.readyState") == "complete":
                    break
            except RuntimeError as e:  # asked while the old page was being replaced: ask again
                if "navigated or closed" not in str(e) and "context" not in str(e):
                    raise
            if time.time() > deadline:
                raise RuntimeError(f"{url} did not load")
            time.sleep(0.1)
        time.sleep(settle)

    def wait_for(self, expression: str, timeout: float = 60.0):
        deadline = time.time() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.time() > deadline:
                raise TimeoutError(f"waited {timeout} s for {expression}")
            time.sleep(0.05)

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the browser and its helper processes
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.profile.cleanup()
