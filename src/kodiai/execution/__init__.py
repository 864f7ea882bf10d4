"""kodiai.execution: runs Claude Code on a workspace and publishes through in-process MCP tools.

Import from the modules (kept light here; the SDK is imported only where it is used):

- ``executor``: ``Executor`` (protocol), ``ClaudeAgentExecutor``
- ``types``: ``ExecutionContext``, ``ExecutionResult``
- ``options``: ``ModelCredentials``, the enforced tool surface
- ``tools``: ``build_mcp_servers`` and the six tools (``github_comment``, ``reviewCommentThread``,
  ``github_inline_comment``, ``github_ci``)
- ``pacing``: ``WritePacer`` (spaced, retried writes without duplicates)
- ``review_output``: the review-output marker and the already-published scan
- ``error_comments``: ``post_or_update_error_comment``; ``errors``: classification and wording
- ``local_review`` / ``local_run``: ``kodiai review``
"""
