"""What every feature's webhook job is given and shares: the dependencies built once by the composition
root (``deps``), the fail-open step helper (``fail_open``) and the PR checkout with its trusted
``.kodiai.yml`` (``checkout``), and the injectable dependency-usage scan (``usage``, ``usage_scan``).
It imports no feature package."""
