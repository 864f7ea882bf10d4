"""``python -m kodiai.server``: the same as ``kodiai serve``, without loading the other CLI groups (the command is the server package's own)."""

from __future__ import annotations

import typer

from kodiai.server.serve_cmd import serve


def main() -> None:
    typer.run(serve)


if __name__ == "__main__":
    main()
