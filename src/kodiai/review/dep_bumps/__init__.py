"""dep_bumps."""
