"""Screenshots of the web frontend's results page, light and dark, for the README: run by
scripts/screenshots. Serves the demo index as the browser tests do (harness.py) and has
headless chromium write docs/screenshots/results-light.png, results-dark.png (1100x900) and
results-phone.png (390x844, a phone's viewport), printing each path and size.
"""

import argparse
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

SHOTS = [
    # (file, scheme, width, height, mobile)
    ("results-light.png", "light", 1100, 900, False),
    ("results-dark.png", "dark", 1100, 900, False),
    ("results-phone.png", "light", 390, 844, True),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--query", default="lighthouse", help="the query shown (default: %(default)s)")
    parser.add_argument("--out", default=str(harness.ROOT / "docs" / "screenshots"),
                        help="where to write the PNGs (default: docs/screenshots)")
    args = parser.parse_args()

    why = harness.missing_tools(harness.target_dir() / "browser-tools")
    if why:
        print(f"scripts/screenshots cannot run: {why}", file=sys.stderr)
        return 1
    bin_dir = harness.build()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="geode-screenshots-") as work:
        data = Path(work) / "data"
        harness.demo_index(data, Path(work) / "demo.log")
        with harness.Server(bin_dir, data, work) as server:
            driver = harness.new_driver()
            try:
                for name, scheme, width, height, mobile in SHOTS:
                    harness.viewport(driver, width, height, mobile)
                    harness.color_scheme(driver, scheme)
                    driver.get(server.base + "/search?" + urlencode({"q": args.query}))
                    path = out / name
                    if not driver.save_screenshot(str(path)):
                        raise RuntimeError(f"chromium wrote no screenshot to {path}")
                    print(f"{path} ({width}x{height}, {scheme}, {path.stat().st_size // 1024} KiB)")
            finally:
                harness.quit_driver(driver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
