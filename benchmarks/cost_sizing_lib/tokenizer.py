"""The cross-check of the 3.5 characters-per-token estimate: Anthropic's published tokenizer.

``@anthropic-ai/tokenizer`` (npm) is the tokenizer of Anthropic's pre-Claude-3 models; its README calls it a
rough approximation for later ones, so it calibrates the estimate, it does not replace it. It is installed
once into the benchmark's cache with npm and run with node; without them the check is skipped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

PACKAGE = "@anthropic-ai/tokenizer@0.0.4"
_COUNT_JS = """
const { countTokens } = require('@anthropic-ai/tokenizer');
let data = '';
process.stdin.on('data', (d) => { data += d; });
process.stdin.on('end', () => {
  console.log(JSON.stringify(JSON.parse(data).map((t) => countTokens(t))));
});
"""


def _installed(root: Path) -> Path | None:
    target = root / "node"
    if (target / "node_modules" / "@anthropic-ai" / "tokenizer").is_dir():
        return target
    if shutil.which("npm") is None:
        return None
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(target), PACKAGE],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return target if done.returncode == 0 else None


def legacy_counts(texts: list[str], root: Path) -> list[int] | str:
    """Token counts of ``texts``, or why they could not be had."""
    if shutil.which("node") is None:
        return "node is not installed"
    target = _installed(root)
    if target is None:
        return f"npm could not install {PACKAGE}"
    script = target / "count.js"
    script.write_text(_COUNT_JS)
    done = subprocess.run(
        ["node", str(script)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        cwd=target,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        return f"the tokenizer failed: {done.stderr.strip()[-300:]}"
    counts = json.loads(done.stdout)
    return [int(c) for c in counts]
