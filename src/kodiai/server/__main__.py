"""``python -m kodiai.server``: the same as ``kodiai serve``, without loading the other CLI groups."""

from __future__ import annotations

import typer

from kodiai.cli.serve_cmd import serve


def main() -> None:
    typer.run(serve)


if __name__ == "__main__":
    main()
