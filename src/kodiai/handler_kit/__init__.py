"""handler_kit."""
