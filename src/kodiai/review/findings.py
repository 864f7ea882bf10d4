"""The title fingerprint under the name the parity vectors call; it lives in :mod:`kodiai.text.fingerprint`
(the stores match findings by it too, and they sit below the review package)."""

from kodiai.text.fingerprint import fingerprint_finding_title

__all__ = ["fingerprint_finding_title"]
