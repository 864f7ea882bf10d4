"""The daily spend cap at the door of every Claude run: the pure decision and its comment (``policy``),
and the gate that reads today's ledger before a run and records the refusal (``gate``)."""
