"""Alembic migration scripts (shipped inside the wheel as ``qaeval_core.migrations``)."""
