"""The web frontend of `geode serve --http` in a real browser: headless chromium (Debian's
chromium and chromium-driver) through WebDriver (selenium), with axe-core (npm) injected into
each page for accessibility.

Run by scripts/test-browser, which builds geode, crawls the fixture capsules into a scratch data
directory (scripts/demo), serves it on a loopback port, runs these tests and stops the server.
When a tool is missing it prints `SKIPPED: why` and passes; CI installs them (.ci/run).

Each test is a function taking the shared context; a failed assertion fails that test only.
The last line is `browser: N passed, N failed`.
"""

import re
import sys
import tempfile
import time
import traceback
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

# A query of the demo index with more than ten results, so with a page 2: the first of these
# for which /api/search has hits past the tenth.
MANY_RESULTS = ["notes", "the", "a", "to", "of"]
# Misspellings whose correction the demo index holds: the first for which /api/search offers a
# "did you mean" with results.
MISSPELT = ["lighthuose", "notse", "barnacel", "bicycel", "chior"]
XSS = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>']
NO_RESULTS = "zzyzx quoggle"
BACKLINKS_OF = "gemini://alpha.test/"
# The demo index holds a French page (capsules-fixture/gamma.test/fr/carnet.gmi).
FRENCH = "ecureuil melancolique"

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


class Context:
    def __init__(self, base, driver, axe_source, server, bin_dir, data):
        self.base = base
        self.driver = driver
        self.axe_source = axe_source
        self.server = server
        self.bin_dir = bin_dir
        self.data = data
        self.many = None
        self.misspelt = None

    def url(self, path):
        return self.base + path


# --- helpers -----------------------------------------------------------------------------------

def by_css(root, selector):
    from selenium.webdriver.common.by import By

    return root.find_elements(By.CSS_SELECTOR, selector)


def one(root, selector, what=None):
    found = by_css(root, selector)
    assert found, f"no {selector} on the page{' (' + what + ')' if what else ''}"
    return found[0]


def page_text(driver):
    return one(driver, "body").text


def submit_and_wait(driver, button):
    """Clicks a submit button and waits until the next page has replaced this one.

    The page being left is marked with a window property; the next document starts without it.
    (Waiting for the old element to go stale races with chromedriver, which may answer for a
    node of a document being torn down with a generic error instead of "stale element".)"""
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("window.__geodeLeaving = true;")
    button.click()

    def arrived(d):
        try:
            return d.execute_script(
                "return !window.__geodeLeaving && document.readyState === 'complete';")
        except WebDriverException:
            return False  # mid-navigation: ask again

    WebDriverWait(driver, 15).until(arrived)


def follow(driver, link):
    submit_and_wait(driver, link)


def search_by_typing(ctx, query):
    """Home page, the query typed into the search box, the form submitted."""
    d = ctx.driver
    d.get(ctx.url("/"))
    form = one(d, "form[role=search]")
    box = one(form, "input#q[name=q]")
    box.clear()
    box.send_keys(query)
    submit_and_wait(d, one(form, "button[type=submit]"))
    return d


def results(driver):
    return by_css(driver, "ol.results > li.result")


def result_urls(driver):
    return [one(r, "a.title").get_attribute("href") for r in results(driver)]


def query_box_value(driver):
    return one(driver, "form[role=search] input#q").get_property("value")


def no_alert(driver):
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = driver.switch_to.alert
        text = alert.text
        alert.dismiss()
    except NoAlertPresentException:
        return
    raise AssertionError(f"an alert opened: {text!r}")


def submit_seed(ctx, text):
    d = ctx.driver
    d.get(ctx.url("/add-seed"))
    form = one(d, "form.add-seed")
    assert (form.get_attribute("method") or "").lower() == "post", "the add-seed form is not POST"
    box = one(form, "input#url[name=url]")
    assert box.get_attribute("type") == "text", f"input#url is type={box.get_attribute('type')}"
    box.clear()
    box.send_keys(text)
    submit_and_wait(d, one(form, "button[type=submit], input[type=submit]"))
    return d


def pick_queries(ctx):
    try:
        choose_queries(ctx)
    except Exception as e:  # noqa: BLE001 - the tests that need them say so
        print(f"choosing queries through /api/search failed: {e}", flush=True)


def choose_queries(ctx):
    for q in MANY_RESULTS:
        if harness.api_search(ctx.base, q, limit=10, offset=10)["hits"]:
            ctx.many = q
            break
    for q in MISSPELT:
        found = harness.api_search(ctx.base, q)
        fix = found.get("did_you_mean")
        if fix and harness.api_search(ctx.base, fix)["total"] > 0:
            ctx.misspelt = (q, fix)
            break


# --- the tests ---------------------------------------------------------------------------------

@test
def search_box_shows_results(ctx):
    d = search_by_typing(ctx, "lighthouse")
    assert urlparse(d.current_url).path == "/search", d.current_url
    assert parse_qs(urlparse(d.current_url).query).get("q") == ["lighthouse"], d.current_url
    assert query_box_value(d) == "lighthouse"
    items = results(d)
    assert items, "no li.result after searching 'lighthouse'"
    for item in items:
        title = one(item, "a.title")
        href = title.get_attribute("href")
        assert href.startswith("gemini://"), f"result link {href!r} is not gemini://"
        assert title.text.strip(), f"result {href} has an empty title"
        one(item, "p.snippet", href)
        assert one(item, "p.facts", href).text.strip(), f"result {href} has empty facts"
    marks = [m.text.lower() for m in by_css(d, "ol.results p.snippet mark")]
    assert any("lighthouse" in m for m in marks), f"no <mark>lighthouse</mark> in the snippets: {marks}"
    assert one(d, "p.summary").text.strip(), "empty p.summary"
    return f"{len(items)} results"


@test
def next_and_previous_pages(ctx):
    assert ctx.many, f"none of {MANY_RESULTS} has more than ten results in /api/search"
    d = search_by_typing(ctx, ctx.many)
    first = result_urls(d)
    assert len(first) == 10, f"page 1 of {ctx.many!r} shows {len(first)} results, not 10"
    assert not by_css(d, "nav.pages a[rel=prev]"), "page 1 has a previous-page link"
    follow(d, one(d, "nav.pages a[rel=next]"))
    assert parse_qs(urlparse(d.current_url).query).get("page") == ["2"], d.current_url
    second = result_urls(d)
    assert second, "page 2 shows no result"
    assert not set(first) & set(second), f"pages 1 and 2 share {set(first) & set(second)}"
    summary = one(d, "p.summary").text
    shown = re.search(r"\b11\s*[-–—]\s*(\d+)\b", summary)
    assert shown, f"page 2's summary does not say 11-…: {summary!r}"
    assert int(shown.group(1)) == 10 + len(second), f"summary {summary!r} with {len(second)} results"
    assert query_box_value(d) == ctx.many
    follow(d, one(d, "nav.pages a[rel=prev]"))
    assert result_urls(d) == first, "the previous-page link does not lead back to page 1"
    return f"{ctx.many!r}: {len(first)} + {len(second)} results; {summary!r}"


@test
def did_you_mean_is_a_working_link(ctx):
    assert ctx.misspelt, f"none of {MISSPELT} gets a 'did you mean' with results in /api/search"
    typo, fix = ctx.misspelt
    d = search_by_typing(ctx, typo)
    link = one(d, "p.did-you-mean a")
    assert fix in link.text, f"the correction link says {link.text!r}, not {fix!r}"
    follow(d, link)
    assert query_box_value(d) == fix, f"after the link the box holds {query_box_value(d)!r}"
    assert results(d), f"no result for the correction {fix!r}"
    return f"{typo!r} -> {fix!r}: {len(results(d))} results"


def assert_geode_page(driver, where):
    """Fails when chromium shows its own error page (no answer, a reset connection) rather
    than one of geode's."""
    url = driver.execute_script("return document.URL")
    assert not url.startswith("chrome-error:"), f"{where}: chromium shows its error page " \
        f"(no answer from geode): {one(driver, 'body').text[:200]!r}"


def assert_inert(driver, payload, where):
    no_alert(driver)
    assert_geode_page(driver, where)
    scripts = by_css(driver, "script")
    assert not scripts, f"{where}: {len(scripts)} <script> element(s) in the DOM"
    images = by_css(driver, "img")
    assert not images, f"{where}: {len(images)} <img> element(s) in the DOM"
    handlers = driver.execute_script(
        "return [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
        ".some(a => a.name.startsWith('on'))).map(e => e.outerHTML.slice(0, 120))")
    assert not handlers, f"{where}: elements with event handlers: {handlers}"


@test
def markup_in_queries_runs_nothing(ctx):
    d = ctx.driver
    for payload in XSS:
        search_by_typing(ctx, payload)
        assert_inert(d, payload, f"/search for {payload!r}")
        assert query_box_value(d) == payload, f"the box holds {query_box_value(d)!r}"
        assert payload in page_text(d), f"the page does not show the query {payload!r}"
        # The same text echoed by the other pages that show what they were given.
        for path in ("/v/search?" + urlencode({"q": payload}),
                     "/backlinks?" + urlencode({"url": payload})):
            d.get(ctx.url(path))
            assert_inert(d, payload, path)
            shown = payload in page_text(d) or payload in [
                e.get_property("value") for e in by_css(d, "input")]
            assert shown, f"{path} does not show {payload!r}"
        submit_seed(ctx, payload)
        assert_inert(d, payload, f"POST /add-seed of {payload!r}")
        assert one(d, "input#url").get_property("value") == payload
    return f"{len(XSS)} payloads x 4 pages"


@test
def add_a_seed(ctx):
    d = submit_seed(ctx, "gemini://example.org/")
    message = one(d, "p.message[role=status]", "after a gemini URL")
    assert message.text.strip(), "empty p.message"
    assert not by_css(d, "p.error"), "a p.error beside the success message"
    said = [message.text.strip()]
    for bad in ("not a url", "https://example.org/"):
        submit_seed(ctx, bad)
        error = one(d, "p.error[role=alert]", f"after {bad!r}")
        assert error.text.strip(), f"empty p.error after {bad!r}"
        assert not by_css(d, "p.message"), f"a success message after {bad!r}"
        form = one(d, "form.add-seed", f"the form again after {bad!r}")
        assert one(form, "input#url").get_property("value") == bad, "the input is not kept"
        said.append(error.text.strip())
    # Recorded in this run's own data directory, and only the gemini URL.
    import subprocess

    listed = subprocess.run(
        [str(Path(ctx.bin_dir) / "geode"), "seed", "list", "--data", str(ctx.data)],
        capture_output=True, text=True, check=True).stdout
    assert "gemini://example.org/" in listed, f"geode seed list does not show it:\n{listed}"
    assert "https://example.org" not in listed and "not a url" not in listed, listed
    return " | ".join(said)


def axe_pages(ctx):
    """(name, path) of each page type; a path of None is the refused add-seed form."""
    return [
        ("home", "/"),
        ("results", "/search?q=lighthouse"),
        ("results p2", f"/search?q={quote(ctx.many or 'notes')}&page=2"),
        ("verbose", "/v/search?q=lighthouse"),
        ("no results", "/search?" + urlencode({"q": NO_RESULTS})),
        ("did you mean", "/search?q=" + quote(ctx.misspelt[0] if ctx.misspelt else "lighthuose")),
        ("French result", "/search?" + urlencode({"q": FRENCH})),
        ("query error", "/search?" + urlencode({"q": '"unclosed'})),
        ("backlinks", "/backlinks?" + urlencode({"url": BACKLINKS_OF})),
        ("backlinks form", "/backlinks"),
        ("known hosts", "/known-hosts"),
        ("stats", "/stats"),
        ("about", "/about"),
        ("add-seed", "/add-seed"),
        ("add-seed refused", None),
        ("not found", "/nope"),
    ]


def load(ctx, path):
    if path is None:
        submit_seed(ctx, "not a url")
        one(ctx.driver, "form.add-seed p.error, p.error[role=alert]", "the refused add-seed form")
    else:
        ctx.driver.get(ctx.url(path))


def run_axe(ctx):
    d = ctx.driver
    d.execute_script(ctx.axe_source)
    outcome = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        ".then(r => done({violations: r.violations.map(v => ({id: v.id, impact: v.impact,"
        " help: v.help, nodes: v.nodes.map(n => ({target: n.target.join(' '),"
        " summary: n.failureSummary}))})), passes: r.passes.length}))"
        ".catch(e => done({error: String(e)}));")
    assert "error" not in outcome, f"axe.run failed: {outcome.get('error')}"
    return outcome


@test
def accessibility_light_and_dark(ctx):
    failures = []
    checked = 0
    for scheme in ("light", "dark"):
        harness.color_scheme(ctx.driver, scheme)
        for name, path in axe_pages(ctx):
            try:
                load(ctx, path)
                assert_geode_page(ctx.driver, f"{name} ({path})")
                outcome = run_axe(ctx)
            except AssertionError as e:  # this page only: the others are still checked
                print(f"  axe {scheme:5} {name:16} {path or 'POST /add-seed'}: not checked", flush=True)
                failures.append(f"{scheme} {name}: {e}")
                continue
            checked += 1
            violations = outcome["violations"]
            bad = [v for v in violations if v["impact"] in ("serious", "critical")]
            listed = ", ".join(f"{v['id']}({v['impact']})" for v in violations) or "none"
            print(f"  axe {scheme:5} {name:16} {path or 'POST /add-seed'}: "
                  f"{len(violations)} violations [{listed}]", flush=True)
            for v in bad:
                for node in v["nodes"][:3]:
                    failures.append(f"{scheme} {name} ({path or 'POST /add-seed'}): "
                                    f"{v['id']} [{v['impact']}] {v['help']} at {node['target']}"
                                    f"\n      {(node['summary'] or '').replace(chr(10), ' ')}")
    harness.color_scheme(ctx.driver, "light")
    shown = failures[:30] + ([f"... and {len(failures) - 30} more"] if len(failures) > 30 else [])
    assert not failures, "serious or critical violations (or pages not checked):\n    " + "\n    ".join(shown)
    return f"{checked} page loads checked, none serious or critical"


@test
def stylesheet_light_and_dark(ctx):
    d = ctx.driver
    colours = {}
    for scheme in ("light", "dark"):
        harness.color_scheme(d, scheme)
        d.get(ctx.url("/search?q=lighthouse"))
        sheets = d.execute_script(
            "return [...document.styleSheets].map(s => s.href && new URL(s.href).pathname)")
        assert "/style.css" in sheets, f"/style.css is not among the page's stylesheets: {sheets}"
        colours[scheme] = d.execute_script(
            "const s = getComputedStyle(document.body);"
            "return [s.backgroundColor, s.color]")
    harness.color_scheme(d, "light")
    assert colours["light"] != colours["dark"], f"the same colours in light and dark: {colours}"
    return f"light {colours['light']}, dark {colours['dark']}"


@test
def content_security_policy_holds(ctx):
    d = ctx.driver
    policies = set()
    d.get_log("browser")  # drop what earlier tests left
    failures = []
    for name, path in axe_pages(ctx):
        try:
            check_policy(ctx, name, path, policies)
        except AssertionError as e:  # this page only: the others are still checked
            failures.append(str(e))
    assert not failures, "\n    ".join(failures)
    return "; ".join(sorted(policies))


def check_policy(ctx, name, path, policies):
    """The page's CSP header (read with urllib), then the page in chromium: nothing loaded
    from elsewhere and no CSP violation in the console."""
    d = ctx.driver
    if path is not None:
        status, headers, _ = harness.fetch(ctx.url(path))
        policy = headers.get("Content-Security-Policy")
        assert policy, f"{path} ({status}) has no Content-Security-Policy header"
        policies.add(policy)
        directives = {part.split()[0].lower(): part.split()[1:]
                      for part in policy.split(";") if part.strip()}
        assert "default-src" in directives, f"{path}: CSP without default-src: {policy}"
        for directive, sources in directives.items():
            weak = {"'unsafe-inline'", "'unsafe-eval'", "*", "data:", "http:", "https:"}
            assert not weak & set(sources), f"{path}: CSP {directive} allows {weak & set(sources)}"
    load(ctx, path)
    assert_geode_page(d, f"{name} ({path})")
    # Every resource the page loaded came from geode itself.
    resources = d.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    foreign = [r for r in resources if not r.startswith(ctx.base + "/")]
    assert not foreign, f"{name}: requests to other origins: {foreign}"
    logged = d.get_log("browser")
    csp = [e["message"] for e in logged
           if "Content Security Policy" in e["message"] or "Refused to" in e["message"]]
    assert not csp, f"{name} ({path}): CSP violations in the console:\n" + "\n".join(csp)


@test
def readable_on_a_phone(ctx):
    d = ctx.driver
    widths = {}
    harness.viewport(d, 390, 844, mobile=True)
    try:
        for name, path in (("home", "/"), ("results", "/search?q=lighthouse"),
                           ("verbose", "/v/search?q=lighthouse"), ("about", "/about"),
                           ("add-seed", "/add-seed")):
            d.get(ctx.url(path))
            assert by_css(d, "meta[name=viewport]"), f"{name}: no <meta name=viewport>"
            inner, scroll = d.execute_script(
                "return [innerWidth, document.documentElement.scrollWidth]")
            assert scroll <= inner, f"{name} ({path}) scrolls sideways on a phone: " \
                f"{scroll} px wide in a {inner} px viewport"
            widths[name] = scroll
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    return f"390 px viewport, page widths {widths}"


@test
def other_languages_are_marked(ctx):
    d = ctx.driver
    d.get(ctx.url("/search?" + urlencode({"q": FRENCH})))
    assert results(d), f"no result for {FRENCH!r}"
    langs = d.execute_script(
        "return [...document.querySelectorAll('ol.results > li.result')].map(li =>"
        " [li, ...li.querySelectorAll('[lang]')].map(e => e.getAttribute('lang'))"
        ".filter(Boolean))")
    assert any(any(lang.startswith("fr") for lang in found) for found in langs), \
        f"no lang=fr on the French result: {langs}"
    return f"lang attributes: {langs}"


# --- the runner --------------------------------------------------------------------------------

def run_tests(ctx, only=None):
    passed = failed = 0
    for fn in TESTS:
        if only and not any(o in fn.__name__ for o in only):
            continue
        start = time.monotonic()
        try:
            said = fn(ctx)
        except Exception as e:  # noqa: BLE001 - each failure is reported, the rest still run
            failed += 1
            print(f"FAIL {fn.__name__} ({time.monotonic() - start:.1f} s)", flush=True)
            if isinstance(e, AssertionError):
                print(f"    {e}", flush=True)
            else:
                print(traceback.format_exc(), flush=True)
            try:
                print(f"    at {ctx.driver.current_url}", flush=True)
            except Exception:  # noqa: BLE001
                pass
        else:
            passed += 1
            print(f"ok   {fn.__name__} ({time.monotonic() - start:.1f} s)"
                  + (f": {said}" if said else ""), flush=True)
    return passed, failed


def main(argv):
    only = argv[1:]
    started = time.monotonic()
    tools = harness.target_dir() / "browser-tools"
    why = harness.missing_tools(tools)
    if why:
        print(f"SKIPPED: the browser tests cannot run: {why}", flush=True)
        return 0
    axe_source = harness.axe_script(tools).read_text()
    bin_dir = harness.build()
    with tempfile.TemporaryDirectory(prefix="geode-browser-") as work:
        data = Path(work) / "data"
        harness.demo_index(data, Path(work) / "demo.log")
        server = harness.Server(bin_dir, data, work)
        with server:
            harness.log(f"== serving {server.base}; chromium through {harness.CHROMEDRIVER}")
            driver = harness.new_driver()
            try:
                ctx = Context(server.base, driver, axe_source, server, bin_dir, data)
                pick_queries(ctx)
                passed, failed = run_tests(ctx, only)
            finally:
                harness.quit_driver(driver)
            # The graceful stop an operator's service manager relies on.
            status = server.stop()
            if status == 0:
                passed += 1
                print("ok   server_stops_on_sigterm: exit status 0", flush=True)
            else:
                failed += 1
                print("FAIL server_stops_on_sigterm: "
                      + ("still running 10 s after SIGTERM" if status is None
                         else f"exit status {status}"), flush=True)
        if failed:
            print("--- geode serve's log (last 40 lines)")
            print("\n".join(server.log_text().splitlines()[-40:]))
    print(f"({time.monotonic() - started:.0f} s)")
    print(f"browser: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
