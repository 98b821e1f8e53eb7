"""Make the shared case builders of this folder (``gn_cases``) importable in any import mode."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
