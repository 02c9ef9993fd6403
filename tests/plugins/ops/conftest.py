"""Make the shared harness (``_ops_harness``) importable from the op legalization tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
