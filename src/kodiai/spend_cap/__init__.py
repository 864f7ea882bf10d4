"""spend_cap."""
