"""Generate ``jsregex_node_cases.json``: random JS patterns × tricky texts, evaluated by a real ``node``.

Run ``python tests/compat/jsregex_node_cases.py`` (needs ``node`` on PATH) to regenerate; the test suite only
reads the JSON, so it does not need node. Each case is ``[source, flags, text, expected]`` where expected
is ``null`` (``new RegExp`` throws), ``false`` (no match) or ``[index, length, groups]``.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

OUT = Path(__file__).with_name("jsregex_node_cases.json")

ATOMS = [
    "a",
    "b",
    "A",
    "K",
    "k",
    "s",
    "ſ",
    "\u212a",
    "İ",
    "i",
    "ı",
    "é",
    "É",
    "ß",
    "ẞ",
    "ǅ",
    "\\d",
    "\\D",
    "\\w",
    "\\W",
    "\\s",
    "\\S",
    "\\b",
    "\\B",
    ".",
    "^",
    "$",
    "[a-z]",
    "[^a-z]",
    "[A-Z0-9_]",
    "[\\w-]",
    "[\\s\\S]",
    "[^]",
    "[]",
    "[é-ë]",
    "[\\d-z]",
    "[\\cJ]",
    "[\\b]",
    "[\\-]",
    "[k]",
    "[K]",
    "[ſ]",
    "[\\u00e0-\\u00ff]",
    "\\u00e9",
    "\\x41",
    "\\x4",
    "\\cJ",
    "\\c",
    "\\0",
    "\\1",
    "\\2",
    "\\8",
    "\\12",
    "\\k<x>",
    "\\p{L}",
    "\\Z",
    "\\A",
    "\\/",
    "\\.",
    "\\n",
    "\\r",
    "\\t",
    "\\v",
    "\\f",
    "(a)",
    "(?:a|b)",
    "(?<x>a)",
    "(?=a)",
    "(?!a)",
    "(?<=a)",
    "(?<!a)",
    "(?<=a+)",
    "(?<=\\w+)",
    "{",
    "}",
    "]",
    "a{,3}",
    "a{2,1}",
    "x{2}",
    "x{1,}",
    "x{0,2}?",
    "*",
    "+",
    "?",
    "*?",
    "+?",
    "??",
    "|",
    "(",
    "[",
    "\\",
    "😀",
    "日",
    "\r",
    "\n",
    "\u2028",
    "\u0085",
    "(?i)",
    "(?<n>b)\\k<n>",
    "\\u{41}",
    "-",
    ",",
    "\\ud83d",
]
TEXTS = [
    "",
    "a",
    "A",
    "ab",
    "aab",
    "ba",
    "K",
    "k",
    "\u212a",
    "s",
    "S",
    "ſ",
    "İ",
    "i",
    "I",
    "ı",
    "é",
    "É",
    "ß",
    "SS",
    "ẞ",
    "ǅ",
    "ǆ",
    "Ǆ",
    "\n",
    "\r",
    "a\rb",
    "a\nb",
    "a\u2028b",
    "a\u0085b",
    "x\r\ny",
    " ",
    "\ufeff",
    "\u00a0",
    "\u0085",
    "\u180e",
    "\u200b",
    "1",
    "٤",
    "_",
    "-",
    "aZ",
    "az",
    "k<x>",
    "p{L}",
    "a{,3}",
    "}",
    "]",
    "{",
    "xx",
    "xxx",
    "😀",
    "a😀b",
    "日本語",
    "café",
    "CAFÉ",
    "\\c",
    "\\",
    "A\x01",
    "é404",
    "HELLO world",
    "foo_bar baz",
    "uuu",
    "u" * 41,
    "8",
    "\n1",
    "x4",
    "\x00",
    "/",
    ".",
    "\t",
    "\x0b",
    "\x0c",
    "\u2029",
    "abc\nabd",
]
NODE_SCRIPT = """
const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));
process.stdout.write(JSON.stringify(cases.map(([src, flags, text]) => {
  let r; try { r = new RegExp(src, flags); } catch (e) { return null; }
  const m = r.exec(text);
  return m === null ? false : [m.index, m[0].length, Array.from(m).slice(1).map(x => x === undefined ? null : x)];
})));
"""


def generate(seed: int, patterns: int, max_atoms: int, texts_per_pattern: int) -> list[tuple[str, str, str]]:
    rng = random.Random(seed)
    cases = []
    for _ in range(patterns):
        source = "".join(rng.choice(ATOMS) for _ in range(rng.randint(1, max_atoms)))
        flags = rng.choice(["", "i", "m", "s", "im", "is", "ims", "i", "i"])
        cases.extend((source, flags, text) for text in rng.sample(TEXTS, texts_per_pattern))
    return cases


def run_node(cases: list[tuple[str, str, str]]) -> list[object]:
    done = subprocess.run(
        ["node", "-e", NODE_SCRIPT], input=json.dumps(cases), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


if __name__ == "__main__":
    cases = generate(seed=20261121, patterns=300, max_atoms=2, texts_per_pattern=10)
    cases += generate(seed=20261122, patterns=300, max_atoms=6, texts_per_pattern=6)
    expected = run_node(cases)
    rows = [[s, f, t, e] for (s, f, t), e in zip(cases, expected, strict=True)]
    OUT.write_text(
        "[\n" + ",\n".join(json.dumps(r, ensure_ascii=True) for r in rows) + "\n]\n", encoding="utf-8"
    )
    print(f"wrote {len(rows)} cases to {OUT}")
