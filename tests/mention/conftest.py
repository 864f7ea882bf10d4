"""The mention tests that drive the real handler stack share the handler fixtures."""

from support.handler_fixtures import fresh_permissions, harness  # noqa: F401
