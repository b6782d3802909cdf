"""What the browser tests and scripts/screenshots share: the tools they need (Debian's chromium
and chromium-driver, selenium from PyPI, axe-core from npm), the geode build, a demo index of
the fixture capsules (scripts/demo) and `geode serve --http` on a loopback port, and a headless
chromium driven through WebDriver.

Everything talks to loopback addresses only: the fixture capsules while the demo index is
crawled, and geode's HTTP frontend. Chromium runs with every background service off, so it
makes no request of its own to any other site.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# axe-core's exact version: a newer one may add rules, and a change of result should come
# with a change of this line, not with a new release.
AXE_VERSION = "4.14.1"

# Without these, headless chromium on a machine with no network keeps trying to reach Google's
# services (updates, sync, field trials) and floods the log with refused connections.
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",  # we run as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-features=Translate,OptimizationHints,MediaRouter",
    "--metrics-recording-only",
    "--hide-scrollbars",
    "--lang=en-US",
]

# Selenium must never download a browser or a driver (no network, and not ours to fetch).
os.environ["SE_OFFLINE"] = "1"


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def target_dir():
    """Cargo's target directory, respecting CARGO_TARGET_DIR and build.target-dir."""
    out = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    return Path(json.loads(out)["target_directory"])


def missing_tools(tools_dir):
    """Why the browser tests cannot run here (None when they can). Installs axe-core from npm
    into `tools_dir` (a cache under the target directory, not committed) when it is not there."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (Debian package {package})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the Python module selenium is missing (pip install selenium)"
    if axe_script(tools_dir) is None:
        return f"axe-core {AXE_VERSION} could not be installed from npm into {tools_dir}"
    return None


def axe_script(tools_dir):
    """The path of axe.min.js in `tools_dir`, installing it with npm when absent."""
    package = Path(tools_dir) / "node_modules" / "axe-core"
    script = package / "axe.min.js"

    def version():
        try:
            return json.loads((package / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return None

    if script.exists() and version() == AXE_VERSION:
        return script
    if shutil.which("npm") is None:
        return None
    Path(tools_dir).mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--silent", "--no-audit", "--no-fund", "--no-save",
         "--prefix", str(tools_dir), f"axe-core@{AXE_VERSION}"],
        capture_output=True, text=True,
    )
    if done.returncode != 0:
        log(done.stdout + done.stderr)
        return None
    return script if script.exists() and version() == AXE_VERSION else None


def build():
    """Builds geode and geode-fixture; returns the directory holding them."""
    log("== cargo build --workspace --bins")
    subprocess.run(
        ["cargo", "build", "--quiet", "--locked", "--workspace", "--bins"], cwd=ROOT, check=True
    )
    return target_dir() / "debug"


def demo_index(data, logfile):
    """Crawls the fixture capsules into `data` with scripts/demo (on loopback addresses)."""
    log(f"== scripts/demo {data} (log: {logfile})")
    with open(logfile, "w") as out:
        done = subprocess.run(
            [str(ROOT / "scripts" / "demo"), str(data)], cwd=ROOT, stdout=out, stderr=out
        )
    if done.returncode != 0:
        log(Path(logfile).read_text())
        raise RuntimeError(f"scripts/demo failed with status {done.returncode}")


class Server:
    """`geode serve --http 127.0.0.1:0` over `data`; `base` is its http://127.0.0.1:PORT."""

    def __init__(self, bin_dir, data, workdir, extra=()):
        self.out_path = Path(workdir) / "serve.out"
        self.err_path = Path(workdir) / "serve.log"
        self.args = [
            str(Path(bin_dir) / "geode"), "serve", "--data", str(data),
            "--http", "127.0.0.1:0", "--hostname", "localhost", "--rate-limit", "0", *extra,
        ]
        self.proc = None
        self.base = None

    def start(self):
        log("== " + " ".join(self.args[1:]))
        self.out = open(self.out_path, "w")
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(self.args, stdout=self.out, stderr=self.err,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for line in self.out_path.read_text().splitlines():
                found = re.search(r"http://(127\.0\.0\.1:\d+)", line)
                if found:
                    self.base = "http://" + found.group(1)
                    return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(
            "geode serve --http did not say where it listens:\n--- stdout\n"
            + self.out_path.read_text() + "--- stderr\n" + self.err_path.read_text()
        )

    def stop(self, timeout=10):
        """SIGTERM, as an operator's service manager would send; the exit status, or None when
        the server was still running `timeout` seconds later (it is then killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def log_text(self):
        return self.err_path.read_text() if self.err_path.exists() else ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        self.kill()
        self.out.close()
        self.err.close()


def fetch(url, data=None, headers=None):
    """(status, headers, body text) of a request to the server; HTTP errors are answers too."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode("utf-8", "replace")


def api_search(base, query, limit=10, offset=0):
    """The JSON object of /api/search."""
    from urllib.parse import urlencode

    status, _, body = fetch(f"{base}/api/search?" + urlencode(
        {"q": query, "offset": offset, "limit": limit}))
    if status != 200:
        raise AssertionError(f"/api/search?q={query!r} answered {status}: {body[:300]}")
    return json.loads(body)


def new_driver(width=1100, height=900, profile_dir=None):
    """A headless chromium on a fresh profile, its console log kept for get_log('browser')."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = profile_dir or tempfile.mkdtemp(prefix="geode-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(CHROMEDRIVER, log_output=subprocess.DEVNULL)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(60)
    driver._geode_profile = profile
    return driver


def quit_driver(driver):
    profile = getattr(driver, "_geode_profile", None)
    driver.quit()
    if profile:
        shutil.rmtree(profile, ignore_errors=True)


def color_scheme(driver, scheme):
    """Emulates prefers-color-scheme: 'light' or 'dark' for the pages loaded next."""
    driver.execute_cdp_cmd(
        "Emulation.setEmulatedMedia",
        {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
    )
    matches = driver.execute_script(
        "return matchMedia(arguments[0]).matches", f"(prefers-color-scheme: {scheme})")
    if not matches:
        raise AssertionError(f"chromium did not take prefers-color-scheme: {scheme}")


def viewport(driver, width, height, mobile=False):
    """Sets the page's viewport exactly (the window size includes no chrome in headless mode,
    but this also makes a phone's viewport: mobile layout and a device pixel ratio of 1)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile,
    })
