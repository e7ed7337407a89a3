"""SQL persistence: SQLModel tables and the async engine (SQLite by default, PostgreSQL by URL)."""
