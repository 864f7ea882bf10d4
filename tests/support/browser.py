"""Headless Chromium for the dashboard's browser tests (tests/browser): Debian's ``chromium`` driven through Selenium and
Debian's ``chromedriver`` (both installed by ``make test``).

Without them the tests skip with the reason, unless ``KODIAI_REQUIRE_BROWSER`` is set (``make test`` sets
it), when they fail: CI must not pass by skipping them. Screenshots go to ``test-artifacts/dashboard/`` at
the repository root (git-ignored), named ``<page>-<width>.png``; their paths are printed.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "dashboard"
CHROMEDRIVER = "/usr/bin/chromedriver"
WIDE, NARROW = 1280, 390


def _missing() -> str | None:
    for program, path in (("chromium", shutil.which("chromium")), ("chromedriver", CHROMEDRIVER)):
        if not path or not os.access(path, os.X_OK):
            return f"{program} is not installed (Debian: apt-get install chromium chromium-driver; `make test` does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in the dev extras: pip install -e '.[dev]')"
    return None


@dataclass
class Browser:
    """One headless Chromium (a WebDriver session) with the few gestures the tests need."""

    driver: Any

    def open(self, url: str) -> None:
        self.driver.get(url)

    @property
    def text(self) -> str:
        return str(self.driver.find_element("tag name", "body").text)

    def by_id(self, element_id: str) -> str:
        return str(self.driver.find_element("id", element_id).text)

    def viewport(self, width: int, height: int = 900) -> None:
        """Emulate a ``width``-CSS-pixel viewport (a phone's at 390: mobile, so the viewport meta counts)."""
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
        )

    def overflow(self) -> tuple[int, int]:
        """(document scroll width, viewport width): a layout that fits has the first <= the second."""
        width, inner = self.driver.execute_script(
            "return [document.scrollingElement.scrollWidth, window.innerWidth]"
        )
        return int(width), int(inner)

    def screenshot(self, name: str, width: int) -> Path:
        """The whole page (not only the viewport) at ``width``, saved as ``<name>-<width>.png``."""
        height = int(self.driver.execute_script("return document.scrollingElement.scrollHeight"))
        self.viewport(width, max(height, 200))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}-{width}.png"
        assert self.driver.save_screenshot(str(path)), f"no screenshot for {path}"
        self.viewport(width)
        print(f"screenshot: {path}")
        return path

    def severe_console(self) -> list[dict[str, Any]]:
        """The console's SEVERE entries since the last call (CSP violations, failed loads, 4xx/5xx)."""
        return [e for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]

    def cookie(self, name: str) -> str | None:
        found = self.driver.get_cookie(name)
        return str(found["value"]) if found else None


def start_browser() -> Browser:
    """A new headless Chromium; fails (``KODIAI_REQUIRE_BROWSER`` set) or skips when it is missing."""
    reason = _missing()
    if reason:
        if os.environ.get("KODIAI_REQUIRE_BROWSER"):
            pytest.fail(f"KODIAI_REQUIRE_BROWSER is set but {reason}")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in (
        "--headless=new",
        "--no-sandbox",  # the tests run as root, where Chromium's own sandbox cannot start
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--window-size={WIDE},900",
    ):
        options.add_argument(arg)
    options.binary_location = shutil.which("chromium") or "chromium"
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    return Browser(driver)
