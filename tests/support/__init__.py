"""Test support shared by every package's tests (never imported by library code)."""
