"""Regenerate ``picomatch_cases.json``: random globs × paths, answered by the real picomatch 4.0.3 under Node.

Not run by the test suite (CI has no Node). To refresh the fixture::

    mkdir -p /tmp/pm && cd /tmp/pm && npm init -y && npm install picomatch@4.0.3
    .venv/bin/python tests/compat/make_picomatch_cases.py /tmp/pm > tests/compat/picomatch_cases.json
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

ATOMS = [
    "***", "[[:alpha:]]", "[[:digit:]]x", "[[:punct:]]", "{1..3}", "{a..c}", "*", "**", "?", "a", "b", "src", ".", "..", "/", "[a-c]", "[!a]", "[^a]", "{a,b}", "{x,*.ts}", "*(a)",
    "+(a|b)", "?(a)", "@(a|b)", "!(a)", ".ts", "-", "+", "$", "^", "(", ")", "|", "é", " ", "[", "]", "{",
    "}", ",", "\\.", "\\*", ".md", "test", "**/", "/**", "x.y",
]  # fmt: skip
SEGMENTS = [
    "a", "b", "src", ".github", ".", "..", "a.ts", "b.md", "test", "x.test.ts", "é", "a b", "(a)", "a+b",
    "[a]", "{a}", "ab", "aa", "ba", "x.y", "$x", "^", "a|b", ".env", "auth.ts", "x\n", "x\r",
]  # fmt: skip
# Double quotes (literal runs) next to a trailing globstar hit picomatch's output slicing; not reproduced.
EXCLUDED = ('"',)

NODE = """
const pm = require(process.argv[1] + '/node_modules/picomatch');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(input.map(([p, s]) => {
  try { return pm(p, { dot: true })(s); } catch (e) { return 'error'; }
})));
"""


def main() -> None:
    rng = random.Random(20261121)
    patterns: set[str] = set()
    while len(patterns) < 1200:
        p = "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, 5)))
        p = ("!" if rng.random() < 0.15 else "") + ("./" if rng.random() < 0.1 else "") + p
        if p and not any(b in p for b in EXCLUDED):
            patterns.add(p)
    paths = sorted({"/".join(rng.choice(SEGMENTS) for _ in range(rng.randint(1, 4))) for _ in range(300)})
    pairs = [(p, s) for p in sorted(patterns) for s in rng.sample(paths, 4)]
    out = subprocess.run(
        ["node", "-e", NODE, str(Path(sys.argv[1]).resolve())],
        input=json.dumps(pairs),
        capture_output=True,
        text=True,
        check=True,
    )
    answers = json.loads(out.stdout)
    rows = [[p, s, a] for (p, s), a in zip(pairs, answers, strict=True)]
    json.dump({"picomatch": "4.0.3", "options": {"dot": True}, "cases": rows}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
