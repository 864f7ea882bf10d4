"""The ``@kodiai`` mention handler (behaviour E3): Phase A gates and enqueues (``entry``), Phase B
answers or applies the request (``job``, with write-mode publishing in ``publish``).
The persisted mention state is in ``state``; write mode in the ``write`` subpackage."""
