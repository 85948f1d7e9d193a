"""Property-based tests (hypothesis): see conftest.py for the profiles and the
KNOWN_DEFECTS table. A package, so that its conftest and helper modules cannot shadow
tests/conftest.py (which the other test files import as `conftest`)."""
