"""Pure building blocks of the ``@kodiai`` mention flow (spec/exec.md §3): surfaces and pre-queue
filters, config gates and write intent, the context block, the prompt, and trusted-code replies.

Orchestration (workspace, execution, write-mode publishing) belongs to the mention handler.
"""
