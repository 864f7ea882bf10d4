"""How a team reacted to one past finding, as the retrieval context and the prompt describe it.

A tally counts the human 👍 / 👎 reactions feedback sync kept for a finding's comment. ``net < 0`` means
the team rejected the finding more than it confirmed it: such a memory is shown to the model as something
*not* to repeat, never as a precedent.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

_TIMES = {1: "once", 2: "twice"}


def _times(count: int) -> str:
    return _TIMES.get(count, f"{count} times")


class FeedbackTally(BaseModel):
    model_config = ConfigDict(frozen=True)

    thumbs_up: int = 0
    thumbs_down: int = 0

    @property
    def net(self) -> int:
        return self.thumbs_up - self.thumbs_down

    @property
    def rejected(self) -> bool:
        """Net-negative: never a precedent to repeat."""
        return self.net < 0

    @property
    def empty(self) -> bool:
        return self.thumbs_up == 0 and self.thumbs_down == 0

    def describe(self) -> str:
        """``confirmed``, ``confirmed twice``, ``rejected 3 times``, ``confirmed once, rejected twice``."""
        parts = []
        if self.thumbs_up:
            parts.append(
                "confirmed"
                if self.thumbs_up == 1 and not self.thumbs_down
                else f"confirmed {_times(self.thumbs_up)}"
            )
        if self.thumbs_down:
            parts.append(
                "rejected"
                if self.thumbs_down == 1 and not self.thumbs_up
                else f"rejected {_times(self.thumbs_down)}"
            )
        return ", ".join(parts) or "no feedback"
